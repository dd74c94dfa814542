/**
 * Sends generated requests through a transport (in-process `app.inject`, or raw HTTP to the
 * real server), with the run's credentials, and judges each answer (oracle.ts).
 */
import type { FuzzRequest, HttpGenerator } from './generator';
import type { Findings } from './oracle';
import { judgeHttp, snippet, type HttpAnswer } from './oracle';

/** A request as it goes on the wire. `source: 'other'` comes from another client address. */
export interface WireRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: Buffer | null;
  lengthLie: number | null;
  source: 'admin' | 'other';
  timeoutMs: number;
}

export class TransportTimeout extends Error {}

export interface HttpTransport {
  /** Resolves with the answer; rejects with TransportTimeout, or any error for a lost connection. */
  send(req: WireRequest): Promise<HttpAnswer>;
}

export interface Credentials {
  token: string;
  password: string;
}

/** Routes that check a password or a code: their failures count against the client address. */
const PASSWORD_ROUTES = [
  '/api/auth/login',
  '/api/init/change_password',
  '/api/2fa/verify',
  '/api/2fa/init',
  '/api/2fa/delete',
];

export interface HttpStats {
  requests: number;
  statuses: Record<string, number>;
  slow: number;
  transportErrors: number;
  relogins: number;
}

export interface HttpRunOptions {
  gen: HttpGenerator;
  transport: HttpTransport;
  creds: Credentials;
  findings: Findings;
  /** Stop after this many requests or at this time (performance.now()), whichever first. */
  count?: number;
  deadline?: number;
  concurrency?: number;
  timeoutMs?: number;
  /** Called with each request before it goes out (the long run keeps the last few). */
  onSend?: (req: FuzzRequest, wire: WireRequest) => void;
  /** Checked before each request: true stops the run (the server process died). */
  stop?: () => boolean;
}

export function describeRequest(req: FuzzRequest | WireRequest, max = 300): string {
  const type = req.headers['content-type'] ?? '-';
  const body = req.body ? `${req.body.length}B ${JSON.stringify(snippet(req.body, 80))}` : 'none';
  const auth = 'auth' in req ? ` auth=${req.auth}` : '';
  const lie = req.lengthLie !== null ? ` content-length=${req.lengthLie}` : '';
  return `${req.method} ${snippet(req.url, max)}${auth} type=${JSON.stringify(type)}${lie} body=${body}`;
}

export async function loginToken(
  transport: HttpTransport,
  password: string,
  timeoutMs: number,
): Promise<string> {
  const res = await transport.send({
    method: 'POST',
    url: '/api/auth/login',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: Buffer.from(new URLSearchParams({ user: 'admin', passwd: password }).toString()),
    lengthLie: null,
    source: 'admin',
    timeoutMs,
  });
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${snippet(res.body)}`);
  return (JSON.parse(res.body.toString('utf8')) as { result: { token: string } }).result.token;
}

export async function authCheck(
  transport: HttpTransport,
  token: string,
  timeoutMs: number,
): Promise<number> {
  const res = await transport.send({
    method: 'GET',
    url: '/api/auth/check',
    headers: { token },
    body: null,
    lengthLie: null,
    source: 'admin',
    timeoutMs,
  });
  return res.status;
}

function withAuth(req: FuzzRequest, creds: Credentials, disposable: string | null): WireRequest {
  const headers = { ...req.headers };
  let url = req.url;
  const token = disposable ?? creds.token;
  let source: 'admin' | 'other' = 'admin';
  switch (req.auth) {
    case 'token-header':
      headers['token'] = token;
      break;
    case 'cookie':
      headers['cookie'] = `auth_token=${token}`;
      break;
    case 'query':
      url += `${url.includes('?') ? '&' : '?'}auth_token=${token}`;
      break;
    case 'none':
      source = 'other';
      break;
    case 'garbage-token':
      headers['token'] = token.slice(0, 63) + (token.endsWith('0') ? '1' : '0');
      source = 'other';
      break;
    case 'kvmd-right':
      headers['x-kvmd-user'] = 'admin';
      headers['x-kvmd-passwd'] = creds.password;
      break;
    case 'kvmd-wrong':
      headers['x-kvmd-user'] = 'admin';
      headers['x-kvmd-passwd'] = 'not the password';
      source = 'other';
      break;
  }
  if (PASSWORD_ROUTES.some((p) => req.url.startsWith(p))) source = 'other';
  return {
    method: req.method,
    url,
    headers,
    body: req.body,
    lengthLie: req.lengthLie,
    source,
    timeoutMs: 0,
  };
}

export async function runHttp(opts: HttpRunOptions): Promise<HttpStats> {
  const { gen, transport, creds, findings } = opts;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const stats: HttpStats = {
    requests: 0,
    statuses: {},
    slow: 0,
    transportErrors: 0,
    relogins: 0,
  };
  const more = (): boolean =>
    !(opts.stop?.() ?? false) &&
    (opts.count === undefined || stats.requests < opts.count) &&
    (opts.deadline === undefined || performance.now() < opts.deadline);

  let relogin: Promise<void> | null = null;
  const ensureSession = async (): Promise<void> => {
    relogin ??= (async () => {
      if ((await authCheck(transport, creds.token, timeoutMs)) === 200) return;
      creds.token = await loginToken(transport, creds.password, timeoutMs);
      stats.relogins += 1;
    })().finally(() => {
      relogin = null;
    });
    return relogin;
  };

  const one = async (): Promise<void> => {
    const req = gen.next();
    stats.requests += 1;
    // Logout goes out with a throwaway session so the run's own survives (and is fuzzed).
    const disposable =
      req.endsSession && ['token-header', 'cookie', 'query'].includes(req.auth)
        ? await loginToken(transport, creds.password, timeoutMs).catch(() => null)
        : null;
    const wire = withAuth(req, creds, disposable);
    wire.timeoutMs = timeoutMs;
    opts.onSend?.(req, wire);
    let answer: HttpAnswer;
    try {
      answer = await transport.send(wire);
    } catch (err) {
      if (err instanceof TransportTimeout) {
        // A body shorter than its Content-Length keeps the server waiting: expected.
        if (req.mayBeSlow || req.lengthLie !== null) stats.slow += 1;
        else
          findings.add('hang', req.route, `no answer within ${timeoutMs} ms`, describeRequest(req));
      } else {
        stats.transportErrors += 1;
      }
      return;
    }
    stats.statuses[answer.status] = (stats.statuses[answer.status] ?? 0) + 1;
    const verdict = judgeHttp(wire.method, wire.url, answer);
    if (!verdict.ok) findings.add(verdict.kind, req.route, verdict.detail, describeRequest(req));
    const usedToken = ['token-header', 'cookie', 'query'].includes(req.auth) && !disposable;
    if (usedToken && (answer.status === 401 || answer.status === 403)) {
      // The server may be restarting (msd/set_enabled): the caller re-checks the session.
      await ensureSession().catch(() => {
        stats.transportErrors += 1;
      });
    }
  };

  const worker = async (): Promise<void> => {
    while (more()) await one();
  };
  await Promise.all(Array.from({ length: opts.concurrency ?? 4 }, () => worker()));
  return stats;
}
