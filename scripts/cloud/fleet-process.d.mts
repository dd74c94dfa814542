// Types of fleet-process.mjs (a fleet replica as a real process).
import type { FleetConfig } from '../../fleet/src/context';

export const FLEET_MAIN: string;

export function fleetConfig(opts: {
  index?: number;
  port: number;
  host?: string;
  data: string;
  database: string;
  nats: string[];
  turn?: FleetConfig['turn'];
  smtp: { host?: string; port: number; from?: string };
  replica?: string;
}): FleetConfig;

export interface FleetProcess {
  url: string;
  config: FleetConfig;
  pid: number | undefined;
  /** Resolves with the exit code or the signal that ended it. */
  exited: Promise<number | string | null>;
  /** The last 64 KiB of its output. */
  log(): string;
  /** Sends `signal` (default SIGKILL) and waits for the exit; SIGKILL after 10 s. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** SIGTERM and wait. */
  stop(): Promise<void>;
}

export function startFleet(
  config: FleetConfig,
  opts?: { echo?: boolean; env?: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<FleetProcess>;
