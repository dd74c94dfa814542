/**
 * The plain-HTTP listener that sends browsers to the HTTPS console. The Host header is the
 * client's word: echoing it made the device an open redirect (`Host: evil.example` →
 * `https://evil.example:8443/`, issue 9 item 22). Only the device's own names and addresses are
 * used; anything else redirects to the address the connection arrived on.
 */
import { createServer, type Server } from 'node:http';
import { hostname, networkInterfaces } from 'node:os';
import type { Logger } from '../log';
import { answerClientError, edgeServerOptions, guardServer, type EdgeLimits } from './edge';
import { LogBudget } from './log-budget';

/** The names and addresses this device answers to, lower-case, IPv6 without brackets. */
export function ownNames(extra: readonly string[] = []): Set<string> {
  const host = hostname().toLowerCase();
  const names = new Set<string>(['localhost', host, `${host}.local`]);
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) names.add(a.address.toLowerCase().replace(/%.*$/, ''));
  }
  for (const n of extra) names.add(n.toLowerCase());
  return names;
}

/** `name`, `name:port`, `[v6]` or `[v6]:port` → the bare host, lower-case; null if malformed. */
export function hostOf(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^(?:\[([0-9a-f:.]+)\]|([a-z0-9.-]+))(?::\d{1,5})?$/i.exec(header.trim());
  if (!m) return null;
  return (m[1] ?? m[2] ?? '').toLowerCase();
}

function urlHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

/** Where a request for `path` with this Host, arriving on `localAddress`, is sent. */
export function redirectLocation(opts: {
  host: string | undefined;
  localAddress: string | undefined;
  path: string;
  httpsPort: number;
  names: Set<string>;
}): string {
  const asked = hostOf(opts.host);
  let host: string;
  if (asked !== null && opts.names.has(asked)) host = asked;
  else {
    const local = (opts.localAddress ?? '127.0.0.1').replace(/^::ffff:/, '').replace(/%.*$/, '');
    host = local;
  }
  const port = opts.httpsPort === 443 ? '' : `:${opts.httpsPort}`;
  const path = opts.path.startsWith('/') ? opts.path : '/';
  return `https://${urlHost(host)}${port}${path}`;
}

export function createRedirectServer(opts: {
  httpsPort: number;
  names: readonly string[];
  limits: EdgeLimits;
  log: Logger;
}): Server {
  const server = createServer(edgeServerOptions(opts.limits), (req, res) => {
    const location = redirectLocation({
      host: req.headers.host,
      localAddress: req.socket.localAddress,
      path: req.url ?? '/',
      httpsPort: opts.httpsPort,
      names: ownNames(opts.names),
    });
    res.writeHead(301, { location, 'content-length': 0 }).end();
  });
  guardServer(server, opts.limits, opts.log, new LogBudget());
  server.on('clientError', answerClientError);
  return server;
}
