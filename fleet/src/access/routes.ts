/**
 * Users, groups and sign-in options (docs/cloud.md "Users, groups and roles"): the admin's users
 * and groups API, `GET groups` for everyone signed in, and OpenID Connect sign-in when it is
 * configured. Every change goes to the event log with the admin who made it.
 */
import type { FastifyInstance } from 'fastify';
import { FLEET_API, type FleetAuthOptions } from '@kvm/protocol';
import { Users } from '../accounts/users';
import type { FleetCore } from '../app';
import type { FleetContext } from '../context';
import { adminOrThrow, bodyOf, ipOf, ok, userOrThrow } from '../http';
import { registerOidcRoutes } from '../oidc/routes';
import { Groups, type GroupKind } from './groups';

export function registerAccessRoutes(
  app: FastifyInstance,
  ctx: FleetContext,
  core: FleetCore,
): void {
  const users = new Users(core.accounts.db, core.accounts);
  const groups = new Groups(core.accounts.db);
  const event = ctx.devices.event.bind(ctx.devices);

  app.get(`${FLEET_API}/auth/options`, () =>
    ok<FleetAuthOptions>({
      signup: true,
      oidc: ctx.config.oidc ? { name: ctx.config.oidc.name } : null,
    }),
  );

  // ---- users (admin) ---------------------------------------------------------------------------

  app.get(`${FLEET_API}/users`, async (req) => {
    await adminOrThrow(req, ctx);
    return ok(await users.list(req.query as Record<string, unknown>));
  });

  app.post(`${FLEET_API}/users`, async (req) => {
    const admin = await adminOrThrow(req, ctx);
    const made = await users.create(admin, bodyOf(req), ipOf(req, ctx));
    await event('user_created', {
      accountId: made.id,
      actor: admin.username,
      detail: { id: made.id, username: made.username, role: made.role },
    });
    return ok(made);
  });

  app.patch<{ Params: { id: string } }>(`${FLEET_API}/users/:id`, async (req) => {
    const admin = await adminOrThrow(req, ctx);
    const change = await users.patch(req.params.id, bodyOf(req), ipOf(req, ctx));
    const row = await users.row(change.id);
    if (change.changed.length) {
      await event('user_changed', {
        accountId: change.id,
        actor: admin.username,
        // the new values (never the password)
        detail: { ...change, role: row.role, disabled: row.disabled },
      });
    }
    return ok(row);
  });

  app.delete<{ Params: { id: string } }>(`${FLEET_API}/users/:id`, async (req) => {
    const admin = await adminOrThrow(req, ctx);
    const gone = await users.remove(admin, req.params.id);
    await event('user_deleted', {
      actor: admin.username,
      detail: { id: gone.id, username: gone.username },
    });
    return ok({});
  });

  // ---- groups ----------------------------------------------------------------------------------

  app.get(`${FLEET_API}/groups`, async (req) => {
    const user = await userOrThrow(req, ctx);
    return ok(await groups.list(user));
  });

  for (const kind of ['users', 'devices'] as const satisfies readonly GroupKind[]) {
    app.post(`${FLEET_API}/groups/${kind}`, async (req) => {
      const admin = await adminOrThrow(req, ctx);
      const made = await groups.create(kind, bodyOf(req).name);
      await event('group_changed', {
        actor: admin.username,
        detail: { kind, id: made.id, name: made.name, op: 'created' },
      });
      return ok(made);
    });

    app.patch<{ Params: { id: string } }>(`${FLEET_API}/groups/${kind}/:id`, async (req) => {
      const admin = await adminOrThrow(req, ctx);
      const body = bodyOf(req);
      const { name } =
        kind === 'users'
          ? await groups.patchUserGroup(req.params.id, body)
          : await groups.patchDeviceGroup(req.params.id, body);
      await event('group_changed', {
        actor: admin.username,
        detail: { kind, id: req.params.id, name, op: 'changed', fields: Object.keys(body) },
      });
      return ok({ id: req.params.id, name });
    });

    app.delete<{ Params: { id: string } }>(`${FLEET_API}/groups/${kind}/:id`, async (req) => {
      const admin = await adminOrThrow(req, ctx);
      const gone = await groups.remove(kind, req.params.id);
      await event('group_changed', {
        actor: admin.username,
        detail: { kind, id: gone.id, name: gone.name, op: 'deleted' },
      });
      return ok({});
    });
  }

  registerOidcRoutes(app, ctx, core);
}
