/**
 * Command line of `npm start -- ...`. Options override the config file's keys.
 */
import { parseArgs } from 'node:util';
import { deepMerge } from '@kvm/protocol';
import { TARGETS, type TargetName } from './config';

export interface CliOptions {
  config?: string;
  overrides: {
    target?: TargetName;
    data_dir?: string;
    server?: { listen?: string; tls?: boolean; redirect_listen?: string | null };
    log?: { level?: string };
  };
  help: boolean;
}

export const USAGE = `Usage: npm start -- [options]

  --target <name>       remote computer: ${TARGETS.join(' | ')} (default qemu)
  --data <dir>          data folder: state, certificate, logs (default ./.data)
  --listen <host:port>  where the console is served (default 0.0.0.0:8443)
  --no-tls              plain HTTP, no redirect listener (loopback tests only)
  --redirect <host:port|off>  HTTP listener that redirects to HTTPS (default 0.0.0.0:8080)
  --config <file>       YAML config file (keys in README.md)
  --log-level <level>   fatal | error | warn | info | debug | trace
  -h, --help            this text
`;

export class CliError extends Error {}

export function parseCli(argv: string[]): CliOptions {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        target: { type: 'string' },
        data: { type: 'string' },
        listen: { type: 'string' },
        'no-tls': { type: 'boolean' },
        redirect: { type: 'string' },
        config: { type: 'string' },
        'log-level': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    throw new CliError(`${(err as Error).message}\n\n${USAGE}`);
  }
  const overrides: CliOptions['overrides'] = {};
  if (values.target !== undefined) {
    if (!(TARGETS as readonly string[]).includes(values.target)) {
      throw new CliError(`--target: unknown target '${values.target}' (${TARGETS.join(', ')})`);
    }
    overrides.target = values.target as TargetName;
  }
  if (values.data !== undefined) overrides.data_dir = values.data;
  const server: NonNullable<CliOptions['overrides']['server']> = {};
  if (values.listen !== undefined) server.listen = values.listen;
  if (values['no-tls']) {
    server.tls = false;
    server.redirect_listen = null;
  }
  if (values.redirect !== undefined)
    server.redirect_listen = values.redirect === 'off' ? null : values.redirect;
  if (Object.keys(server).length) overrides.server = server;
  if (values['log-level'] !== undefined) overrides.log = { level: values['log-level'] };
  return { config: values.config, overrides, help: values.help ?? false };
}

/** Deep-merges CLI overrides onto the file's object (objects merge, other values replace). */
export function mergeConfig(
  base: Record<string, unknown>,
  over: Record<string, unknown>,
): Record<string, unknown> {
  return deepMerge(base, over);
}
