/**
 * `node fleet/dist/sim.js --fleet https://127.0.0.1:8443 --ca <cert.pem> --username U
 * --password P [--count N] [--change-every-ms MS] [--reboot-ms MS] [--fail-upgrade 3,7]
 * [--exit-with-stdin]`:
 * N simulated devices bound to that account until SIGINT/SIGTERM (docs/cloud.md "Simulated
 * devices"). The password may come from SIM_PASSWORD instead of the command line.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { SimFleet } from './sim-fleet';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      fleet: { type: 'string' },
      ca: { type: 'string' },
      username: { type: 'string' },
      password: { type: 'string' },
      count: { type: 'string', default: '10' },
      'change-every-ms': { type: 'string', default: '5000' },
      'reboot-ms': { type: 'string', default: '2000' },
      'fail-upgrade': { type: 'string', default: '' },
      // a parent's pipe: when it closes (the parent died), so does this
      'exit-with-stdin': { type: 'boolean', default: false },
    },
  });
  const password = values.password ?? process.env.SIM_PASSWORD;
  if (!values.fleet || !values.ca || !values.username || !password) {
    throw new Error('usage: sim.js --fleet <https url> --ca <cert.pem> --username U --password P');
  }
  const failing = new Set(values['fail-upgrade'].split(',').filter(Boolean).map(Number));
  const sims = await SimFleet.start({
    fleetUrl: values.fleet,
    ca: readFileSync(values.ca, 'utf8'),
    account: { username: values.username, password },
    count: Number(values.count),
    changeEveryMs: Number(values['change-every-ms']),
    rebootMs: Number(values['reboot-ms']),
    failUpgrade: (i) => failing.has(i),
  });
  await sims.waitOnline();
  console.log(`${sims.devices.length} simulated devices online: ${sims.devices[0]?.name} ...`);
  const stop = () => {
    void sims.stop().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  if (values['exit-with-stdin']) {
    process.stdin.on('end', stop);
    process.stdin.resume();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
