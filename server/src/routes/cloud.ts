/**
 * `/api/cloud/*`: the device's cloud panel (docs/api.md "Cloud", docs/cloud.md "Device"), and
 * GL's `/api/astrowarp/*` names with GL's shapes (wire-protocol.md 5.13) for GL's clients.
 * Every route needs a session. Arguments come in a JSON body or the query; passwords and codes
 * are never echoed. A fleet that fails or is unreachable answers 502, one too slow 504.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { CloudLogin, CloudSignUp } from '@kvm/protocol';
import { ValidatorError } from '../errors';
import { askerOf } from '../http/auth';
import type { CloudService } from '../services/cloud/cloud-service';
import { bool, str } from '../validators';

/** The panel's forms are small. */
export const CLOUD_BODY_LIMIT = 8 * 1024;

/** A request's arguments: the JSON body's fields, else the query's. */
function argsOf(request: FastifyRequest): Record<string, unknown> {
  const body = request.body;
  const fromBody =
    body && typeof body === 'object' && !Array.isArray(body)
      ? (body as Record<string, unknown>)
      : {};
  return { ...((request.query ?? {}) as Record<string, unknown>), ...fromBody };
}

/** Only strings (and `privacy`, a boolean) reach the forms; other types are 400 here. */
function formOf(args: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    const v = args[f];
    if (v === undefined || v === null) continue;
    if (f === 'privacy') out[f] = bool('privacy', v);
    else if (typeof v === 'string' && v.length <= 256) out[f] = v;
    else throw new ValidatorError(`The argument '${f}' must be a string of at most 256 characters`);
  }
  return out;
}

const LOGIN_FIELDS = ['username', 'password', 'region', 'totp'] as const;
const SIGNUP_FIELDS = [
  'username',
  'email',
  'email_code',
  'password',
  'password2',
  'privacy',
  'region',
] as const;

export function cloudRoutes(app: FastifyInstance, cloud: CloudService, trustProxy: boolean): void {
  const opts = { bodyLimit: CLOUD_BODY_LIMIT };

  app.get('/api/cloud/status', async () => cloud.getState());

  app.post('/api/cloud/enable', opts, async (request) =>
    cloud.setEnabled(bool('enable', argsOf(request)['enable'])),
  );

  app.post('/api/cloud/server', opts, async (request) => cloud.setServer(argsOf(request)['url']));

  app.post('/api/cloud/trust', opts, async (request) =>
    cloud.trustServer(argsOf(request)['fingerprint']),
  );

  app.post('/api/cloud/bind/code', opts, async () => cloud.bindCode());

  app.post('/api/cloud/bind/login', opts, async (request) =>
    cloud.bindLogin(formOf(argsOf(request), LOGIN_FIELDS) as Partial<CloudLogin>),
  );

  app.post('/api/cloud/signup/email-code', opts, async (request) => {
    await cloud.signupEmailCode(argsOf(request)['email']);
    return {};
  });

  app.post('/api/cloud/signup', opts, async (request) =>
    cloud.signup(formOf(argsOf(request), SIGNUP_FIELDS) as Partial<CloudSignUp>),
  );

  const unbind = async (request: FastifyRequest): Promise<ReturnType<CloudService['getState']>> => {
    const args = argsOf(request);
    const passwd = str('passwd', args['passwd'], { hidden: true });
    const code =
      args['code'] === undefined || args['code'] === ''
        ? undefined
        : str('code', args['code'], { hidden: true });
    if (code !== undefined && !/^\d{6}$/.test(code)) {
      throw new ValidatorError("The argument 'code' is not a valid 6-digit code");
    }
    return cloud.unbind(passwd, code, askerOf(request, trustProxy, 'cloud-unbind'));
  };
  app.post('/api/cloud/unbind', opts, unbind);

  // ---- GL's names (wire-protocol.md 5.13) ------------------------------------------------

  app.get('/api/astrowarp/status', async () => {
    const s = cloud.getState();
    return {
      result: 'success',
      status: s.account
        ? { bindtime: s.bound_at, email: s.account.email, username: s.account.username }
        : {},
      enabled: s.enabled,
    };
  });

  // GL: a GET with side effects; only exactly `true` enables
  const enable = async (request: FastifyRequest): Promise<{ result: string; enabled: boolean }> => {
    const v = argsOf(request)['enable'];
    if (v !== 'true' && v !== 'false' && typeof v !== 'boolean') {
      throw new ValidatorError("The argument 'enable' must be true or false");
    }
    const s = await cloud.setEnabled(v === true || v === 'true');
    return { result: 'success', enabled: s.enabled };
  };
  app.get('/api/astrowarp/enable', enable);
  app.post('/api/astrowarp/enable', opts, enable);

  app.get('/api/astrowarp/unbind', unbind);
  app.post('/api/astrowarp/unbind', opts, unbind);

  const dynamicCode = async (): Promise<{ code: string; expires_in: number }> =>
    cloud.currentCode();
  app.get('/api/astrowarp/get_dynamic_code', dynamicCode);
  app.post('/api/astrowarp/get_dynamic_code', opts, dynamicCode);

  // the fleet's page where a signed-in account enters a code (fleet/src/ui: #devices)
  const bindLink = async (): Promise<{ link: string; code: string; expires_in: number }> => {
    const c = await cloud.currentCode();
    const base = cloud.getState().url ?? '';
    return { link: `${base}/?code=${c.code}#devices`, ...c };
  };
  app.get('/api/astrowarp/get_bind_link', bindLink);
  app.post('/api/astrowarp/get_bind_link', opts, bindLink);
}
