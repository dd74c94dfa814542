/**
 * The device server's entry point: command line and config file, data folder, certificate,
 * logs, then listen. Everything the process starts is stopped on SIGTERM/SIGINT.
 */
// first: V8's heap settings apply to what the other modules allocate
import { settleHeapSoon } from './young-generation';
import type { Server } from 'node:http';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { buildApp, createContext } from './app';
import { CliError, mergeConfig, parseCli, USAGE } from './cli';
import type { Logger } from './log';
import { openFileLimit } from './fd-limit';
import { NetnsNetwork } from './drivers/network/netns';
import { edgeLimits } from './http/edge';
import { createRedirectServer } from './http/redirect';
import { buildConfig, ConfigError, readConfigFile, type AppConfig } from './config';
import { EXIT_UPGRADE, READY_MESSAGE } from './install/boot';
import { loadConfigDefaults, productVersion } from './paths';
import { RotatingLogFile } from './services/log-file';
import { loadOrCreateCertificate } from './services/tls';

function formatHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

async function loadConfig(argv: string[]): Promise<AppConfig> {
  const cli = parseCli(argv);
  if (cli.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  const file = cli.config ?? process.env['KVM_CONFIG'];
  const fromFile = file ? await readConfigFile(file) : {};
  return buildConfig(
    mergeConfig(fromFile, cli.overrides as Record<string, unknown>),
    loadConfigDefaults(),
    file ?? 'config',
  );
}

/** Plain-HTTP listener that sends every request to the HTTPS console (http/redirect.ts). */
function startRedirect(config: AppConfig, log: Logger): Server | null {
  const target = config.server.redirect_listen;
  if (!config.server.tls || !target) return null;
  const server = createRedirectServer({
    httpsPort: config.server.listen.port,
    names: config.server.names,
    limits: edgeLimits(config.server),
    log,
  });
  server.on('error', (err) => process.stderr.write(`redirect listener: ${err.message}\n`));
  server.listen(target.port, target.host);
  return server;
}

async function main(): Promise<void> {
  const started = performance.now();
  let config: AppConfig;
  try {
    config = await loadConfig(process.argv.slice(2));
  } catch (err) {
    if (err instanceof ConfigError || err instanceof CliError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  await mkdir(config.data_dir, { recursive: true, mode: 0o700 });
  const logFile = new RotatingLogFile(
    join(config.data_dir, 'logs', 'server.log'),
    config.log.file_max_bytes,
    config.log.files,
  );
  const logger = pino(
    { level: config.log.level, base: { pid: process.pid } },
    pino.multistream([
      { level: config.log.level, stream: logFile },
      { level: 'warn', stream: process.stderr },
    ]),
  );

  // A crash must not leave the device limping: log it and exit non-zero, so the launcher or
  // systemd starts a fresh process (issue 9, item 1).
  process.on('uncaughtException', (err, origin) => {
    try {
      logger.fatal({ err, origin }, 'uncaught exception: exiting for a restart');
    } finally {
      process.exit(70);
    }
  });

  const version = productVersion();
  const https = config.server.tls
    ? await loadOrCreateCertificate(join(config.data_dir, 'tls'))
    : null;
  const { host, port } = config.server.listen;

  // The running app; a restart (virtual media enabled or disabled: the device "reboots") closes
  // it, every driver and child process with it, and builds it anew on the same port.
  let app: FastifyInstance;
  let restarting: Promise<void> | null = null;
  /** What this start could not put back (the network's kept settings): READY carries it. */
  let startProblems: string[] = [];
  // Under the launcher (npm start, systemd) an upgrade can be installed: it names the folder.
  const installDir = process.env['KVM_INSTALL_DIR'];
  const factoryRoot = process.env['KVM_FACTORY_ROOT'];
  const install =
    installDir && factoryRoot && process.send ? { installDir, factoryRoot } : undefined;
  const start = async (): Promise<void> => {
    const ctx = await createContext(config, version, logger, {
      requestRestart: () => {
        restarting ??= restart().finally(() => {
          restarting = null;
        });
      },
      install,
      exitForUpgrade: () => stop('upgrade', EXIT_UPGRADE),
    });
    app = await buildApp(ctx, { logger, https });
    await app.listen({ host, port });
    // Developer targets: the console answers inside the device's namespace too (port 443, its
    // LAN and tunnel addresses), handed to the server running now (platform/netns/console-bridge.ts).
    const network = ctx.drivers.system.network;
    if (network instanceof NetnsNetwork) {
      const cap = edgeLimits(config.server).maxConnections ?? 1024;
      void network.attachConsole((socket) => app.server.emit('connection', socket), cap);
    }
    startProblems = [ctx.network.startProblem].filter((p): p is string => p !== null);
    settleHeapSoon();
  };
  const restart = async (): Promise<void> => {
    // let the answer of the call that asked for it go out first
    await new Promise((r) => setTimeout(r, 200));
    logger.info({}, 'restarting');
    const begun = performance.now();
    await app.close();
    await start();
    logger.info({ ms: Math.round(performance.now() - begun) }, 'restarted');
  };
  await start();
  const redirect = startRedirect(config, logger);
  const address = app!.server.address();
  const realPort = typeof address === 'object' && address ? address.port : port;
  const scheme = config.server.tls ? 'https' : 'http';
  const shown = host === '0.0.0.0' || host === '::' ? 'localhost' : formatHost(host);
  const readyMs = Math.round(performance.now() - started);
  logger.info(
    {
      host,
      port: realPort,
      target: config.target,
      data: config.data_dir,
      readyMs,
      version,
      // the connection cap derives from it (http/edge.ts); the launcher raises it
      openFileLimit: openFileLimit(),
    },
    'listening',
  );
  process.stdout.write(
    `KVM console ${version} (target ${config.target}) on ${scheme}://${shown}:${realPort}/ ready in ${readyMs} ms\n`,
  );

  // Listening with its drivers started: the launcher keeps an upgrade on trial from here on,
  // unless this start has problems (then it rolls the upgrade back; otherwise it logs them).
  process.send?.({ type: READY_MESSAGE, version, problems: startProblems });

  let stopping = false;
  function stop(signal: string, code = 0): void {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    const force = setTimeout(() => process.exit(code || 1), 10_000);
    force.unref();
    redirect?.close();
    Promise.resolve(restarting)
      .then(() => app.close())
      .then(() => {
        logFile.close();
        process.exit(code);
      })
      .catch((err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(code || 1);
      });
  }
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('unhandledRejection', (err) => logger.error({ err }, 'unhandled rejection'));
}

main().catch((err: unknown) => {
  process.stderr.write(`fatal: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
