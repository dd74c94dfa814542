// eslint-disable-next-line @typescript-eslint/triple-slash-reference -- the package has no types: ours, also for e2e
/// <reference path="./oidc-provider.d.ts" />
/**
 * A real OpenID Connect provider for tests (npm `oidc-provider`, a certified implementation) on
 * 127.0.0.1 over HTTP, with one confidential client and a few fixed users, and its own small
 * sign-in and consent pages (no request leaves the machine: the library's development pages
 * load web fonts). Route tests sign in end to end with `driveOidcLogin`; the e2e specs point
 * Chromium at the same pages.
 *
 *   const idp = await startOidcProvider({ users: [{ sub: 'u1', password: 'pw', email: ... }],
 *                                         redirectUris: [fleetUrl + '/cloud-basic/v1/oidc/callback'] });
 *   // fleet config: oidc: { issuer: idp.issuer, client_id: idp.clientId, client_secret: idp.clientSecret }
 *   await idp.stop();
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider, { type Configuration } from 'oidc-provider';

export interface OidcTestUser {
  /** The subject (also the login name on the provider's sign-in page). */
  sub: string;
  password: string;
  email?: string;
  email_verified?: boolean;
  preferred_username?: string;
  name?: string;
  /** Any other claims (e.g. `groups: ['fleet-admins']` for admin_claim). */
  extra?: Record<string, unknown>;
}

export interface OidcTestProvider {
  /** `http://127.0.0.1:<port>` */
  issuer: string;
  clientId: string;
  clientSecret: string;
  stop(): Promise<void>;
}

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(res: ServerResponse, title: string, body: string): void {
  res.statusCode = 200;
  res.setHeader('content-type', 'text/html; charset=utf-8');
  res.setHeader('cache-control', 'no-store');
  res.end(
    `<!doctype html><html><head><meta charset="utf-8"><title>${esc(title)}</title></head>` +
      `<body><h1>${esc(title)}</h1>${body}</body></html>`,
  );
}

async function formOf(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > 16_384) throw new Error('form too large');
    chunks.push(c as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/** Starts the provider on a free loopback port. */
export async function startOidcProvider(opts: {
  users: OidcTestUser[];
  /** Where the client may be sent back (the fleet's callback URL). */
  redirectUris?: string[];
}): Promise<OidcTestProvider> {
  const users = new Map(opts.users.map((u) => [u.sub, u]));
  const clientId = 'fleet-test';
  const clientSecret = randomBytes(24).toString('hex');
  const server = createServer();
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'test', use: 'sig', alg: 'RS256' };

  const config: Configuration = {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: opts.redirectUris ?? [
          'https://fleet.test:8443/cloud-basic/v1/oidc/callback',
        ],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys: [jwk as never] },
    cookies: { keys: [randomBytes(32).toString('hex')] },
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['preferred_username', 'name', 'groups'],
    },
    // ID tokens carry the claims (the fleet reads no userinfo)
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    pkce: { required: () => true },
    ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600 },
    findAccount: (_ctx, id) => {
      const u = users.get(id);
      if (!u) return undefined;
      return {
        accountId: id,
        claims: () => ({
          sub: id,
          ...(u.email !== undefined
            ? { email: u.email, email_verified: u.email_verified ?? true }
            : {}),
          ...(u.preferred_username !== undefined
            ? { preferred_username: u.preferred_username }
            : {}),
          ...(u.name !== undefined ? { name: u.name } : {}),
          ...u.extra,
        }),
      };
    },
  };
  const provider = new Provider(issuer, config);
  const callback = provider.callback();

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const m = /^\/interaction\/([\w-]+)(?:\/(login|confirm|abort))?$/.exec(
      (req.url ?? '').split('?')[0]!,
    );
    if (!m) {
      callback(req, res);
      return;
    }
    interaction(req, res, m[1]!, m[2]).catch((err: unknown) => {
      if (!res.headersSent) res.statusCode = 400;
      res.end(String((err as Error).message));
    });
  });

  async function interaction(
    req: IncomingMessage,
    res: ServerResponse,
    uid: string,
    step: string | undefined,
  ): Promise<void> {
    const details = await provider.interactionDetails(req, res);
    const base = `/interaction/${uid}`;
    if (req.method === 'GET' && !step) {
      if (details.prompt.name === 'login') {
        page(
          res,
          'Sign in',
          `<form method="post" action="${base}/login">` +
            '<input name="login" autocomplete="username" placeholder="Login"> ' +
            '<input name="password" type="password" autocomplete="current-password" placeholder="Password"> ' +
            '<button type="submit">Sign in</button></form>' +
            `<form method="post" action="${base}/abort"><button type="submit">Cancel</button></form>`,
        );
      } else {
        page(
          res,
          'Authorize',
          `<p>Let ${esc(String(details.params.client_id))} know who you are?</p>` +
            `<form method="post" action="${base}/confirm"><button type="submit">Continue</button></form>` +
            `<form method="post" action="${base}/abort"><button type="submit">Cancel</button></form>`,
        );
      }
      return;
    }
    if (req.method !== 'POST') throw new Error('method');
    const form = await formOf(req);
    if (step === 'abort') {
      await provider.interactionFinished(
        req,
        res,
        { error: 'access_denied', error_description: 'The user cancelled' },
        { mergeWithLastSubmission: false },
      );
      return;
    }
    if (step === 'login') {
      const u = users.get(form.get('login') ?? '');
      if (!u || u.password !== form.get('password')) {
        page(res, 'Sign in', '<p>Wrong login or password.</p>');
        return;
      }
      await provider.interactionFinished(
        req,
        res,
        { login: { accountId: u.sub } },
        { mergeWithLastSubmission: false },
      );
      return;
    }
    // consent: grant what was asked
    const { session, params } = details;
    const grant = details.grantId
      ? (await provider.Grant.find(details.grantId))!
      : new provider.Grant({ accountId: session!.accountId, clientId: String(params.client_id) });
    const missing = details.prompt.details as {
      missingOIDCScope?: string[];
      missingOIDCClaims?: string[];
    };
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    await provider.interactionFinished(
      req,
      res,
      { consent: { grantId: await grant.save() } },
      { mergeWithLastSubmission: true },
    );
  }

  return {
    issuer,
    clientId,
    clientSecret,
    stop: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}

/**
 * Signs `login` in at the provider without a browser: follows `authorizationUrl`'s redirects
 * with a cookie jar, submits the sign-in form (and the consent form, or cancels when
 * `cancel`), and answers the URL the provider sends the browser back to (the client's
 * redirect_uri with `code`, `state` and `iss`, or `error`). Throws when the sign-in is refused.
 */
export async function driveOidcLogin(
  authorizationUrl: string,
  login: { sub: string; password: string },
  opts: { cancel?: boolean } = {},
): Promise<string> {
  const origin = new URL(authorizationUrl).origin;
  const jar = new Map<string, string>();
  let url = authorizationUrl;
  let method = 'GET';
  let body: string | undefined;
  for (let hop = 0; hop < 20; hop += 1) {
    const res = await fetch(url, {
      method,
      redirect: 'manual',
      headers: {
        cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; '),
        ...(body !== undefined ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      ...(body !== undefined ? { body } : {}),
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair!.indexOf('=');
      jar.set(pair!.slice(0, i).trim(), pair!.slice(i + 1));
    }
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      const next = new URL(location, url);
      if (next.origin !== origin) return next.href;
      url = next.href;
      method = 'GET';
      body = undefined;
      continue;
    }
    const html = await res.text();
    if (res.status !== 200)
      throw new Error(`provider answered ${res.status}: ${html.slice(0, 200)}`);
    if (/Wrong login or password/.test(html)) throw new Error('the provider refused the login');
    const actions = [...html.matchAll(/<form method="post" action="([^"]+)"/g)].map((x) => x[1]!);
    const pick = (suffix: string) => actions.find((a) => a.endsWith(suffix));
    const login_ = pick('/login');
    const step = opts.cancel ? pick('/abort') : (login_ ?? pick('/confirm'));
    if (!step) throw new Error(`no form to submit at ${url}`);
    url = new URL(step, url).href;
    method = 'POST';
    body =
      step === login_ && !opts.cancel
        ? new URLSearchParams({ login: login.sub, password: login.password }).toString()
        : '';
  }
  throw new Error('too many redirects at the provider');
}
