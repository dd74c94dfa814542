/**
 * The fleet's schema, as numbered migrations (migrate.ts applies the missing ones in order, in
 * one transaction). Never edit a migration that shipped: add the next number.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'accounts, sessions, devices, binding, events',
    sql: `
CREATE TABLE accounts (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  username text NOT NULL,
  email text NOT NULL,
  password_hash text NOT NULL,
  region text NOT NULL,
  -- base32; set once 2FA is enabled, pending while it is being set up
  totp_secret text,
  totp_pending text,
  -- the last TOTP step accepted: a code is good once
  totp_last_step bigint,
  created_at timestamptz NOT NULL DEFAULT now()
);
-- case-insensitive uniqueness (SPEC 5 usernames are ASCII)
CREATE UNIQUE INDEX accounts_username_key ON accounts (lower(username));
CREATE UNIQUE INDEX accounts_email_key ON accounts (lower(email));

-- sign-up e-mail codes: one live code per address (lower-cased), only its hash
CREATE TABLE email_codes (
  email text PRIMARY KEY,
  code_hash text NOT NULL,
  tries integer NOT NULL DEFAULT 0,
  expires_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- browser sessions: the cookie's SHA-256 only
CREATE TABLE sessions (
  token_hash text PRIMARY KEY,
  account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  last_seen timestamptz NOT NULL DEFAULT now(),
  address text
);
CREATE INDEX sessions_account_idx ON sessions (account_id);
CREATE INDEX sessions_expires_idx ON sessions (expires_at);

-- bound devices: the secret's SHA-256 only; a revoked binding stays for the log
CREATE TABLE devices (
  id text PRIMARY KEY,
  account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  name text NOT NULL,
  mac text NOT NULL,
  serial text NOT NULL,
  model text NOT NULL,
  version text NOT NULL,
  secret_hash text NOT NULL,
  bound_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz,
  -- presence: the replica holding its agent socket (null: offline)
  replica text,
  last_seen timestamptz
);
CREATE INDEX devices_account_idx ON devices (account_id) WHERE revoked_at IS NULL;
CREATE INDEX devices_replica_idx ON devices (replica) WHERE replica IS NOT NULL;

-- bind codes a device shows: code and claim token as hashes; the secret is made when the
-- device collects the binding, so it is never stored in clear
CREATE TABLE bind_codes (
  code_hash text PRIMARY KEY,
  claim_token_hash text NOT NULL UNIQUE,
  identity jsonb NOT NULL,
  address text,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  claimed_by uuid REFERENCES accounts (id) ON DELETE CASCADE,
  claimed_at timestamptz,
  device_id text REFERENCES devices (id) ON DELETE SET NULL,
  collected_at timestamptz
);
CREATE INDEX bind_codes_expires_idx ON bind_codes (expires_at);

-- the event log: device connected, refused, console opened, bound, unbound...
CREATE TABLE events (
  id bigserial PRIMARY KEY,
  at timestamptz NOT NULL DEFAULT now(),
  kind text NOT NULL,
  device_id text,
  account_id uuid,
  detail jsonb
);
CREATE INDEX events_device_idx ON events (device_id, at);
CREATE INDEX events_account_idx ON events (account_id, at);
`,
  },
];
