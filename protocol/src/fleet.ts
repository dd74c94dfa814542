/**
 * The fleet console's API (docs/cloud.md "Part 2: the fleet console"): what the fleet server's
 * routes answer and its React console reads. Every path is under FLEET_API (`/cloud-basic/v1`),
 * every answer the kvmd envelope; a session is required unless a route says public, and the
 * routes marked admin answer 403 `AdminRequiredError` to a user.
 * Nothing here imports node:* or touches the DOM.
 */

// ---- limits ------------------------------------------------------------------------------------

/** Paging: `limit` defaults to 50, at most 200; `cursor` is opaque (the previous answer's `next`). */
export const FLEET_PAGE_DEFAULT = 50;
export const FLEET_PAGE_MAX = 200;
/** A search string: at most 64 characters. */
export const FLEET_QUERY_MAX = 64;
/** Group names: 1-64 printable characters, unique case-insensitively per kind. */
export const FLEET_GROUP_NAME_MAX = 64;
/** "Remember this browser" after a TOTP sign-in: 30 days; cookie `fleet_trust`. */
export const FLEET_TRUST_TTL_S = 30 * 24 * 3600;
/** A batch action or rollout names at most this many devices (a group is expanded to its members). */
export const FLEET_JOB_MAX_DEVICES = 10_000;
/** Devices a job acts on at once. */
export const FLEET_JOB_CONCURRENCY = 10;
/** The wall: a socket watches at most this many tiles; snapshots at most this often per device. */
export const WALL_MAX_WATCH = 200;
export const WALL_MIN_INTERVAL_MS = 1000;
export const WALL_DEFAULT_INTERVAL_MS = 5000;
/** A wall snapshot: at most this many bytes of JPEG and this box (the device scales it down). */
export const WALL_MAX_JPEG_BYTES = 96 * 1024;
export const WALL_MAX_WIDTH = 480;
export const WALL_MAX_HEIGHT = 270;
/** The JPEG quality (1-100) a wall snapshot is asked at unless the fleet says otherwise. */
export const WALL_SNAPSHOT_QUALITY = 60;
/** The wall's WebSocket. */
export const WALL_PATH = '/cloud-basic/v1/wall/ws';

// ---- users, roles, sign-in ---------------------------------------------------------------------

export type FleetRole = 'admin' | 'user';

/** `GET auth/options` (public): what the sign-in page offers. */
export interface FleetAuthOptions {
  signup: boolean;
  /** Sign-in with an OpenID Connect provider (`GET oidc/start?next=`), or null when none is set. */
  oidc: { name: string } | null;
}

/**
 * `POST login` {username, password, totp?, remember?}: `remember: true` with a right TOTP code
 * sets the `fleet_trust` cookie (httpOnly, 30 days); a later login of the same account from that
 * browser is not asked for TOTP. `GET me` answers this.
 */
export interface FleetMe {
  id: string;
  username: string;
  email: string;
  region: string;
  role: FleetRole;
  totp_enabled: boolean;
  /** Signed in through OpenID Connect (its issuer), or null. */
  oidc_issuer: string | null;
  created_at: number;
}

/** A row of `GET users` (admin). */
export interface FleetUserRow {
  id: string;
  username: string;
  email: string;
  role: FleetRole;
  disabled: boolean;
  totp_enabled: boolean;
  oidc: boolean;
  groups: Array<{ id: string; name: string }>;
  created_at: number;
}

/**
 * `GET users?q=&limit=&cursor=` (admin): sorted by username (case-insensitive) then id; `q`
 * matches username or e-mail (substring, case-insensitive). `next` is null on the last page.
 */
export interface FleetUserPage {
  users: FleetUserRow[];
  next: string | null;
  total: number;
}

/** `POST users` (admin): made by an admin, no e-mail code. */
export interface FleetUserCreate {
  username: string;
  email: string;
  password: string;
  role: FleetRole;
}

/** `PATCH users/:id` (admin): the last admin cannot lose its role or be disabled (409). */
export interface FleetUserPatch {
  role?: FleetRole;
  disabled?: boolean;
  password?: string;
}

// ---- groups ------------------------------------------------------------------------------------

export interface FleetUserGroup {
  id: string;
  name: string;
  members: Array<{ id: string; username: string }>;
  /** The device groups this group sees. */
  device_groups: string[];
}

export interface FleetDeviceGroup {
  id: string;
  name: string;
  device_count: number;
  /** The user groups that see it. */
  user_groups: string[];
}

/**
 * `GET groups`: an admin gets all; a user gets its own user groups (no members, no links) and
 * only the device groups linked to them (to filter its lists by; `user_groups` only its own).
 */
export interface FleetGroups {
  user_groups: FleetUserGroup[];
  device_groups: FleetDeviceGroup[];
}

/** `POST groups/users` {name}, `PATCH groups/users/:id` (admin). */
export interface FleetUserGroupPatch {
  name?: string;
  add_members?: string[];
  remove_members?: string[];
  /** Replaces the linked device groups. */
  device_groups?: string[];
}

/** `POST groups/devices` {name}, `PATCH groups/devices/:id` (admin). */
export interface FleetDeviceGroupPatch {
  name?: string;
  add_devices?: string[];
  remove_devices?: string[];
}

// ---- devices: search and paging -----------------------------------------------------------------

/** A row of `GET devices?q=&group=&online=&limit=&cursor=` (the devices the user sees). */
export interface FleetDeviceRow {
  id: string;
  name: string;
  model: string;
  version: string;
  mac: string;
  serial: string;
  online: boolean;
  replica: string | null;
  last_seen: number | null;
  bound_at: number;
  /** The account that bound it. */
  owner: string;
  groups: Array<{ id: string; name: string }>;
}

/**
 * `GET devices`: sorted by name (case-insensitive) then id; `q` matches name, MAC, serial,
 * model or version (substring, case-insensitive); `group` a device group id; `online`
 * `true`/`false`. `total` counts every match, `next` is null on the last page.
 */
export interface FleetDevicePage {
  devices: FleetDeviceRow[];
  next: string | null;
  total: number;
}

// ---- the event log and alerts -------------------------------------------------------------------

/**
 * Kinds written to the log: `signup`, `login`, `login_failed`, `logout`, `bound`, `bind_claimed`,
 * `unbound`, `device_online`, `device_offline`, `console_opened`, `action` (a batch action on one
 * device), `job_started`, `job_finished`, `rollout_stopped`, `user_created`, `user_changed`,
 * `user_deleted`, `group_changed`, `file_added`, `file_removed`, `alert_sent`, `alert_failed`,
 * `device_renamed` {from, to}, `alert_target_added`, `alert_target_removed` (and the relay's own:
 * `agent_connected`, `agent_disconnected`, `agent_refused`...). `device_online` /
 * `device_offline` may carry `suppressed` (changes of a flapping device left out) or `late`.
 */
export interface FleetEvent {
  id: string;
  at: number;
  kind: string;
  device_id: string | null;
  device_name: string | null;
  /** Who did it (a username), or null for the fleet itself or a device. */
  actor: string | null;
  detail: Record<string, unknown> | null;
}

/**
 * `GET events?device=&kind=&before=&limit=`: newest first; `before` is the last id seen. An
 * admin sees all; a user the events of devices it sees and its own sign-ins.
 */
export interface FleetEventPage {
  events: FleetEvent[];
  next: string | null;
}

export type FleetAlertEvent = 'device_offline' | 'rollout_stopped';
export const FLEET_ALERT_EVENTS: readonly FleetAlertEvent[] = ['device_offline', 'rollout_stopped'];

/**
 * An alert target (admin; `GET alerts/targets`: FleetAlertTarget[] without secrets,
 * `POST alerts/targets` {kind, target, events}, `DELETE alerts/targets/:id`,
 * `POST alerts/targets/:id/test`: the FleetAlertDelivery after its first try). A webhook is
 * POSTed JSON (FleetAlertPayload) with
 * `X-Fleet-Signature: sha256=<hex HMAC-SHA256 of the body with the target's secret>`; the secret
 * is answered once, at creation.
 */
export interface FleetAlertTarget {
  id: string;
  kind: 'email' | 'webhook';
  /** An e-mail address, or an http(s) URL. */
  target: string;
  events: FleetAlertEvent[];
  created_at: number;
  /** Only in the answer to its creation (webhooks). */
  secret?: string;
}

export interface FleetAlertPayload {
  event: FleetAlertEvent | 'test';
  at: number;
  /** One line a person reads (also the e-mail's subject). */
  text: string;
  device?: { id: string; name: string; last_seen: number | null };
  job?: { id: string; name: string; reason: string };
}

/** `GET alerts/deliveries?limit=` (admin): FleetAlertDelivery[], the latest sends, newest first. */
export interface FleetAlertDelivery {
  id: string;
  target_id: string;
  event: FleetAlertEvent | 'test';
  state: 'pending' | 'sent' | 'failed';
  tries: number;
  error: string | null;
  created_at: number;
  sent_at: number | null;
}

// ---- files, batch actions, rollouts --------------------------------------------------------------

/**
 * Files the fleet holds (`GET files`; admin: `PUT files/:kind/:name` with the raw body and a
 * Content-Length, `DELETE files/:id`): disk images to mount, firmware packages to roll out.
 */
export interface FleetFile {
  id: string;
  kind: 'image' | 'package';
  name: string;
  size: number;
  sha256: string;
  /** A package's version (from its manifest), else null. */
  version: string | null;
  created_at: number;
}

export type FleetAction =
  'power' | 'power_long' | 'reset' | 'wol' | 'reboot' | 'msd_mount' | 'msd_unmount' | 'shortcut';

export const FLEET_ACTIONS: readonly FleetAction[] = [
  'power',
  'power_long',
  'reset',
  'wol',
  'reboot',
  'msd_mount',
  'msd_unmount',
  'shortcut',
];

/** Which devices a job acts on: a list, or a device group (expanded when the job starts). */
export type FleetTargets = { devices: string[] } | { group: string };

/**
 * `POST actions`: {action, args, ...targets}. args: `msd_mount` {file_id, cdrom?: boolean};
 * `shortcut` {keys: "ControlLeft,AltLeft,Delete"}; `wol` {mac?} (else every entry of the
 * device's own Wake-on-LAN list). Devices the user does not see are refused (404) before
 * anything runs.
 */
export interface FleetActionRequest {
  action: FleetAction;
  args?: { file_id?: string; cdrom?: boolean; keys?: string; mac?: string };
  devices?: string[];
  group?: string;
}

/**
 * `POST rollouts` (admin): a package to devices in two stages. Stage 1 is
 * ceil(n · first_stage_percent / 100) devices; stage 2, the rest, starts only when every device
 * of stage 1 came back healthy. More than `max_failures` failed devices stop the rollout (no new
 * device starts; running ones finish) and raise a `rollout_stopped` alert.
 */
export interface FleetRolloutRequest {
  file_id: string;
  devices?: string[];
  group?: string;
  /** 1-100, default 10. */
  first_stage_percent?: number;
  /** Default 0. */
  max_failures?: number;
  /** How long a device has to come back healthy after starting its upgrade: default 600 s. */
  health_timeout_s?: number;
}

export type FleetJobState = 'running' | 'done' | 'stopped' | 'cancelled' | 'failed';
export type FleetJobDeviceState = 'pending' | 'running' | 'ok' | 'failed' | 'skipped';

export interface FleetJob {
  id: string;
  kind: 'action' | 'rollout';
  /** The action, or `upgrade` for a rollout. */
  action: FleetAction | 'upgrade';
  /** A short title ("power × 12", "V0.3.0 to group lab"). */
  name: string;
  state: FleetJobState;
  /** A rollout's stage (1 or 2); 1 for an action. */
  stage: number;
  /** Why it stopped or failed, else null. */
  reason: string | null;
  created_by: string | null;
  created_at: number;
  finished_at: number | null;
  counts: Record<FleetJobDeviceState, number>;
}

/** `GET jobs/:id`: the job and each device's result. `GET jobs?limit=&cursor=`: FleetJobPage. */
export interface FleetJobDetail {
  job: FleetJob;
  devices: Array<{
    device_id: string;
    name: string;
    stage: number;
    state: FleetJobDeviceState;
    detail: string | null;
    started_at: number | null;
    finished_at: number | null;
  }>;
}

/** `GET jobs?limit=&cursor=`: newest first; `next` (the last id) is the next page's cursor. */
export interface FleetJobPage {
  jobs: FleetJob[];
  next: string | null;
}

// ---- the wall's socket (WALL_PATH) ---------------------------------------------------------------

/** From the browser: which tiles are on screen (replaces the last list); pause while hidden. */
export type WallClientFrame = { t: 'watch'; ids: string[] } | { t: 'pause' } | { t: 'resume' };

/**
 * From the fleet: a device's state as JSON; its picture as a binary message (u8 length of the
 * id, the id in ASCII, then the JPEG), sent only when it changed.
 */
export type WallServerFrame = {
  t: 'state';
  id: string;
  online: boolean;
  /** The device has a picture (a signal); false with online = "no signal". */
  signal: boolean;
  /** When the last picture was taken (ms since the epoch), or null. */
  at: number | null;
  width?: number;
  height?: number;
};
