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
  {
    version: 2,
    name: 'roles, user groups, device groups and their links',
    sql: `
-- admin: everything; user: the devices it bound plus those of device groups linked to its groups
ALTER TABLE accounts ADD COLUMN role text NOT NULL DEFAULT 'user' CHECK (role IN ('admin', 'user'));
-- a disabled account signs in no more; its sessions end
ALTER TABLE accounts ADD COLUMN disabled_at timestamptz;
-- the fleet's first account is its admin (no account had a role before this migration)
UPDATE accounts SET role = 'admin'
WHERE id = (SELECT id FROM accounts ORDER BY created_at, id LIMIT 1);

CREATE TABLE user_groups (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX user_groups_name_key ON user_groups (lower(name));
CREATE TABLE user_group_members (
  group_id uuid NOT NULL REFERENCES user_groups (id) ON DELETE CASCADE,
  account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  PRIMARY KEY (group_id, account_id)
);
CREATE INDEX user_group_members_account_idx ON user_group_members (account_id);

CREATE TABLE device_groups (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX device_groups_name_key ON device_groups (lower(name));
CREATE TABLE device_group_members (
  group_id uuid NOT NULL REFERENCES device_groups (id) ON DELETE CASCADE,
  device_id text NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
  PRIMARY KEY (group_id, device_id)
);
CREATE INDEX device_group_members_device_idx ON device_group_members (device_id);

-- a user group sees the devices of the device groups linked to it
CREATE TABLE group_links (
  user_group_id uuid NOT NULL REFERENCES user_groups (id) ON DELETE CASCADE,
  device_group_id uuid NOT NULL REFERENCES device_groups (id) ON DELETE CASCADE,
  PRIMARY KEY (user_group_id, device_group_id)
);
CREATE INDEX group_links_device_group_idx ON group_links (device_group_id);
`,
  },
  {
    version: 3,
    name: 'trusted browsers (TOTP remember), OpenID Connect identities and sign-in states',
    sql: `
-- "remember this browser" after a TOTP sign-in: the cookie's SHA-256 only
CREATE TABLE trusted_browsers (
  token_hash text PRIMARY KEY,
  account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX trusted_browsers_account_idx ON trusted_browsers (account_id, created_at);
CREATE INDEX trusted_browsers_expires_idx ON trusted_browsers (expires_at);

-- an OpenID Connect provider's user (issuer, sub) is this account
CREATE TABLE oidc_identities (
  issuer text NOT NULL,
  subject text NOT NULL,
  account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (issuer, subject)
);
CREATE INDEX oidc_identities_account_idx ON oidc_identities (account_id);

-- sign-ins under way at the provider (every replica answers the callback): single use, 10 min
CREATE TABLE oidc_states (
  state text PRIMARY KEY,
  browser_hash text NOT NULL,
  nonce text NOT NULL,
  verifier text NOT NULL,
  next text NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX oidc_states_expires_idx ON oidc_states (expires_at);
`,
  },
  {
    version: 4,
    name: 'device search and paging indexes, event actors, presence log state, alerts',
    sql: `
-- substring search (ILIKE '%q%') over a device's name, MAC, serial, model and version: one
-- trigram index on the fields joined by a newline (no field holds one, so a match never spans
-- two); pg_trgm is a trusted extension (PostgreSQL 13+): a database owner may create it.
-- fastupdate off: devices are written seldom, and rows waiting in GIN's pending list (until a
-- vacuum) make the planner cost the index so high it scans the table instead
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX devices_search_idx ON devices
  USING gin ((name || E'\\n' || mac || E'\\n' || serial || E'\\n' || model || E'\\n' || version) gin_trgm_ops)
  WITH (fastupdate = off) WHERE revoked_at IS NULL;
-- the lists' order and keyset paging: (lower(name), id)
CREATE INDEX devices_name_idx ON devices (lower(name), id) WHERE revoked_at IS NULL;
-- device_online / device_offline in the log: the last one written, when the last online was
-- written, and how many changes were left out since (a flapping device writes at most one pair
-- per 10 s)
ALTER TABLE devices ADD COLUMN presence_logged text CHECK (presence_logged IN ('online', 'offline'));
ALTER TABLE devices ADD COLUMN presence_online_at timestamptz;
ALTER TABLE devices ADD COLUMN presence_suppressed integer NOT NULL DEFAULT 0;
-- what the log says differs from the presence (a suppressed change, a replica's crash): tiny
CREATE INDEX devices_presence_stale_idx ON devices (id)
  WHERE revoked_at IS NULL AND presence_logged IS NOT NULL
    AND presence_logged <> (CASE WHEN replica IS NULL THEN 'offline' ELSE 'online' END);
-- offline devices by when they went (the offline alert's scan)
CREATE INDEX devices_offline_idx ON devices (last_seen) WHERE revoked_at IS NULL AND replica IS NULL;

ALTER TABLE events ADD COLUMN actor text;
CREATE INDEX events_at_idx ON events (at DESC, id);
CREATE INDEX events_kind_idx ON events (kind, id DESC);
CREATE INDEX events_device_id_idx ON events (device_id, id DESC);
CREATE INDEX events_account_id_idx ON events (account_id, id DESC);

-- where alerts go: an e-mail address or an http(s) URL (the webhook's HMAC secret)
CREATE TABLE alert_targets (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  kind text NOT NULL CHECK (kind IN ('email', 'webhook')),
  target text NOT NULL,
  events text[] NOT NULL,
  secret text,
  created_at timestamptz NOT NULL DEFAULT now()
);
-- one offline alert per device and offline period (its start: last_seen when it went); every
-- replica's scanner inserts, the unique key lets one win
CREATE TABLE alert_offline (
  device_id text NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
  since timestamptz NOT NULL,
  raised_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (device_id, since)
);
-- each send to a target: pending until sent or failed after its tries
CREATE TABLE alert_deliveries (
  id bigserial PRIMARY KEY,
  target_id uuid NOT NULL REFERENCES alert_targets (id) ON DELETE CASCADE,
  event text NOT NULL,
  payload jsonb NOT NULL,
  state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'failed')),
  tries integer NOT NULL DEFAULT 0,
  error text,
  next_at timestamptz NOT NULL DEFAULT now(),
  created_at timestamptz NOT NULL DEFAULT now(),
  sent_at timestamptz
);
CREATE INDEX alert_deliveries_due_idx ON alert_deliveries (next_at) WHERE state = 'pending';
CREATE INDEX alert_deliveries_created_idx ON alert_deliveries (created_at DESC, id DESC);
`,
  },
  {
    version: 5,
    name: 'files, jobs (batch actions and rollouts), the time of a device hello',
    sql: `
-- files the fleet holds (<data>/files/<id>): disk images to mount, firmware packages
CREATE TABLE files (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  kind text NOT NULL CHECK (kind IN ('image', 'package')),
  name text NOT NULL,
  size bigint NOT NULL,
  sha256 text NOT NULL,
  -- a package's version (its manifest), else null
  version text,
  created_by uuid REFERENCES accounts (id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX files_kind_name_key ON files (kind, name);

-- a batch action or rollout; the replica running it (runner) beats its heartbeat, another one
-- adopts a running job whose heartbeat is stale
CREATE TABLE jobs (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  kind text NOT NULL CHECK (kind IN ('action', 'rollout')),
  action text NOT NULL,
  name text NOT NULL,
  args jsonb NOT NULL DEFAULT '{}',
  file_id uuid REFERENCES files (id) ON DELETE SET NULL,
  state text NOT NULL DEFAULT 'running'
    CHECK (state IN ('running', 'done', 'stopped', 'cancelled', 'failed')),
  stage integer NOT NULL DEFAULT 1,
  reason text,
  created_by uuid REFERENCES accounts (id) ON DELETE SET NULL,
  created_by_name text,
  created_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  runner text,
  heartbeat timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX jobs_created_idx ON jobs (created_at DESC, id DESC);
CREATE INDEX jobs_creator_idx ON jobs (created_by, created_at DESC, id DESC);
CREATE INDEX jobs_running_idx ON jobs (heartbeat) WHERE state = 'running';

-- each device of a job, in order; a rollout's device in phase 'health' waits for its agent
-- to come back (upgrade_at: when its upgrade was started)
CREATE TABLE job_devices (
  job_id uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  device_id text NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
  name text NOT NULL,
  ord integer NOT NULL,
  stage integer NOT NULL DEFAULT 1,
  state text NOT NULL DEFAULT 'pending'
    CHECK (state IN ('pending', 'running', 'ok', 'failed', 'skipped')),
  phase text,
  detail text,
  upgrade_at timestamptz,
  started_at timestamptz,
  finished_at timestamptz,
  PRIMARY KEY (job_id, device_id)
);
CREATE INDEX job_devices_order_idx ON job_devices (job_id, ord);

-- the last agent hello (a rollout's health: the agent went away and came back)
ALTER TABLE devices ADD COLUMN hello_at timestamptz;
`,
  },
  {
    version: 6,
    name: 'replicas alive (presence of a replica that died)',
    sql: `
-- each replica writes its row every few seconds; the devices a replica held that stopped
-- writing are nobody's any more (a replica killed with no other to take its devices)
CREATE TABLE replicas (
  name text PRIMARY KEY,
  url text NOT NULL,
  seen_at timestamptz NOT NULL DEFAULT now()
);
`,
  },
];
