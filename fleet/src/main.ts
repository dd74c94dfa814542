/**
 * The fleet replica's entry (docs/cloud.md "Running it"):
 *   node fleet/dist/main.js --config <file.json|file.yaml>
 * (or FLEET_CONFIG=<file>, and FLEET_* overrides). Makes a self-signed certificate in the data
 * folder at first start when none is configured, migrates the database, listens on HTTPS, and
 * stops cleanly on SIGTERM/SIGINT.
 */
import { mkdirSync } from 'node:fs';
import pino from 'pino';
import { ConfigError, loadConfig } from './config';
import { createFleet } from './fleet';
import { ensureCertificate } from './tls';

function argValue(name: string): string | null {
  const i = process.argv.indexOf(name);
  if (i >= 0) return process.argv[i + 1] ?? null;
  const eq = process.argv.find((a) => a.startsWith(`${name}=`));
  return eq ? eq.slice(name.length + 1) : null;
}

async function main(): Promise<void> {
  const log = pino({ level: process.env.FLEET_LOG_LEVEL ?? 'info' });
  let config;
  try {
    config = loadConfig(argValue('--config') ?? process.env.FLEET_CONFIG ?? null);
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(`fleet: ${e.message}`);
      process.exit(2);
    }
    throw e;
  }
  mkdirSync(config.data, { recursive: true, mode: 0o700 });
  const host = new URL(config.publicUrl).hostname.replace(/^\[|\]$/g, '');
  const tls = await ensureCertificate(config.tls, host);
  if (tls.made) log.info({ cert: config.tls.cert }, 'made a self-signed certificate');
  const fleet = await createFleet(config, {
    log: log.child({ replica: config.replica }),
    https: { cert: tls.cert, key: tls.key },
  });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping');
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    void fleet.close().then(() => process.exit(0));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  await fleet.app.listen({ host: config.host, port: config.port });
  log.info(
    { replica: config.replica, url: config.publicUrl, listen: `${config.host}:${config.port}` },
    'fleet replica listening',
  );
}

main().catch((e: unknown) => {
  console.error('fleet: failed to start:', e);
  process.exit(1);
});
