/**
 * The fleet's device API (docs/cloud.md "Fleet API"): binding by code (`bind/codes`,
 * `bind/poll`, `devices/claim`) or by login (`bind/login`), the account's devices, unbinding
 * from either side.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { FLEET_API, type DeviceIdentity } from '@kvm/protocol';
import type { FleetCore } from '../app';
import type { FleetContext } from '../context';
import { ValidatorError } from '../errors';
import { bodyOf, ipOf, ok, queryOf, str, userOrThrow } from '../http';
import { BIND_POLL_MAX_MS, DEVICE_QUERY } from './devices';

const printable = (max: number, min = 1) =>
  z
    .string()
    .trim()
    .min(min)
    .max(max)
    // eslint-disable-next-line no-control-regex -- refusing control characters is the point
    .regex(/^[^\u0000-\u001f\u007f]*$/, 'no control characters');

/** A device's name as an account gives it: 1-64 printable characters. */
const deviceNameSchema = printable(64);

/** What a device says about itself: bounded, printable, the MAC normalized to lower case. */
export const identitySchema = z
  .object({
    mac: z
      .string()
      .regex(/^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$/, 'a MAC address (aa:bb:cc:dd:ee:ff)')
      .transform((m) => m.toLowerCase()),
    // a device that cannot read its serial sends '' (the MAC alone is then its fingerprint)
    serial: printable(64, 0),
    name: printable(64),
    model: printable(64),
    version: printable(64),
  })
  .strip();

export function parseIdentity(v: unknown): DeviceIdentity {
  const r = identitySchema.safeParse(v);
  if (!r.success) {
    const first = r.error.issues[0];
    throw new ValidatorError(
      `device.${first?.path.join('.') || ''}: ${first?.message ?? 'invalid identity'}`,
    );
  }
  return r.data;
}

export function registerDeviceRoutes(
  app: FastifyInstance,
  ctx: FleetContext,
  core: FleetCore,
): void {
  const { devices, accounts } = core;

  // a device asks for a code to show (public: it has no binding yet)
  app.post(`${FLEET_API}/bind/codes`, async (req) => {
    const identity = parseIdentity(bodyOf(req).device);
    return ok(await devices.createCode(identity, ipOf(req, ctx)));
  });

  // the device waits for its code to be claimed; the binding comes once
  app.post(`${FLEET_API}/bind/poll`, async (req) => {
    const b = bodyOf(req);
    const ac = new AbortController();
    const onClose = () => ac.abort();
    req.raw.socket.once('close', onClose);
    try {
      return ok(
        await devices.poll(str(b, 'claim_token', 128), ipOf(req, ctx), ac.signal, BIND_POLL_MAX_MS),
      );
    } finally {
      req.raw.socket.off('close', onClose);
    }
  });

  // the device's cloud panel binds with the account's credentials (SPEC 5's login)
  app.post(`${FLEET_API}/bind/login`, async (req) => {
    const b = bodyOf(req);
    const identity = parseIdentity(b.device);
    const account = await accounts.authenticate(
      {
        username: str(b, 'username', 256),
        password: str(b, 'password', 256),
        region: str(b, 'region', 64),
        ...(b.totp !== undefined && b.totp !== '' ? { totp: str(b, 'totp', 16) } : {}),
      },
      ipOf(req, ctx),
      { region: true },
    );
    return ok(await devices.bindByLogin(account, identity));
  });

  // the device unbinds itself while its agent socket is down
  app.post(`${FLEET_API}/device/unbind`, async (req) => {
    await devices.unbindByCredentials(req.headers.authorization);
    return ok({});
  });

  app.post(`${FLEET_API}/devices/claim`, async (req) => {
    const user = await userOrThrow(req, ctx);
    return ok(await devices.claim(user, str(bodyOf(req), 'code', 32), ipOf(req, ctx)));
  });

  app.get(`${FLEET_API}/devices`, async (req) => {
    const user = await userOrThrow(req, ctx);
    return ok(await devices.page(user, queryOf(req, DEVICE_QUERY)));
  });

  app.patch<{ Params: { id: string } }>(`${FLEET_API}/devices/:id`, async (req) => {
    const user = await userOrThrow(req, ctx);
    const name = deviceNameSchema.safeParse(bodyOf(req).name);
    if (!name.success) {
      throw new ValidatorError(`name: ${name.error.issues[0]?.message ?? 'invalid'}`);
    }
    return ok(await devices.rename(user, req.params.id, name.data));
  });

  app.delete<{ Params: { id: string } }>(`${FLEET_API}/devices/:id`, async (req) => {
    const user = await userOrThrow(req, ctx);
    await devices.unbind(user, req.params.id);
    return ok({});
  });
}
