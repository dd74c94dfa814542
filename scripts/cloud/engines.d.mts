// Types of engines.mjs (the cloud's engines for development and tests).
export const PG_BIN: string;
export const NATS_BIN: string;
export const TURN_BIN: string;

export interface Engine {
  name: string;
  port: number;
  /** Stops it and waits (removes its temporary folder). */
  stop(): Promise<void>;
  /** Kills it at once, synchronously (the exit handler's way). */
  kill(): void;
}

export interface PostgresEngine extends Engine {
  /** Connection string of the database made at start (`fleet` by default). */
  url: string;
  dir: string;
  user: string;
}

export interface NatsEngine extends Engine {
  url: string;
}

export interface CoturnEngine extends Engine {
  secret: string;
  realm: string;
  uris: string[];
  minPort: number;
  maxPort: number;
}

export interface SinkMail {
  from: string;
  to: string[];
  subject: string;
  headers: Record<string, string>;
  text: string;
  raw: string;
  at: number;
}

export interface SmtpSink extends Engine {
  host: string;
  mails(): SinkMail[];
  clear(): void;
  /** The oldest mail to `to` no earlier waitFor returned; rejects after `timeoutMs`. */
  waitFor(to: string, timeoutMs?: number): Promise<SinkMail>;
}

export function freePort(opts?: { udp?: boolean }): Promise<number>;
export function startPostgres(opts?: {
  dir?: string;
  db?: string;
  port?: number;
  echo?: boolean;
  timeoutMs?: number;
}): Promise<PostgresEngine>;
export function startNats(opts?: {
  echo?: boolean;
  timeoutMs?: number;
  port?: number;
}): Promise<NatsEngine>;
export function startCoturn(opts?: {
  secret?: string;
  realm?: string;
  allowLoopbackPeers?: boolean;
  relayPorts?: number;
  echo?: boolean;
  timeoutMs?: number;
}): Promise<CoturnEngine>;
export function startSmtpSink(opts?: { print?: boolean; keep?: number }): Promise<SmtpSink>;
export function stopAll(): Promise<void>;
