/**
 * Firmware versions and the `/api/upgrade/*` answers (SPEC 4 "Upgrade flow", wire-protocol.md
 * 5.6 and 5.13; ours are in docs/api.md, Upgrade, and docs/upgrade.md).
 */

export interface ParsedVersion {
  major: number;
  minor: number;
  patch: number;
  /** SPEC 4: plain ranks above release, release above beta. */
  kind: 'plain' | 'release' | 'beta';
  /** The suffix's number (`release1` → 1); 0 for plain. */
  n: number;
}

/**
 * `V1.9.0`, `V1.9.0 release1`, `V1.9.0 beta2` (GL's form); the `V` is optional and the suffix
 * may also follow a `-` (`0.2.0-beta1`, the form package.json can hold). Case-insensitive.
 */
const VERSION_RE = /^v?(\d{1,9})\.(\d{1,9})\.(\d{1,9})(?:[\s-]+(release|beta)\.?(\d{1,9}))?$/i;

/** The version's parts, or null when it does not parse (SPEC 4: it then counts as lowest). */
export function parseVersion(text: string | null | undefined): ParsedVersion | null {
  if (typeof text !== 'string') return null;
  const m = VERSION_RE.exec(text.trim());
  if (!m) return null;
  const kind = (m[4]?.toLowerCase() ?? 'plain') as ParsedVersion['kind'];
  return {
    major: Number(m[1]),
    minor: Number(m[2]),
    patch: Number(m[3]),
    kind,
    n: m[5] === undefined ? 0 : Number(m[5]),
  };
}

const KIND_RANK = { beta: 0, release: 1, plain: 2 } as const;

/** Negative when a < b, 0 when equal, positive when a > b; unparsable is below everything. */
export function compareVersions(
  a: string | null | undefined,
  b: string | null | undefined,
): number {
  const pa = parseVersion(a);
  const pb = parseVersion(b);
  if (!pa || !pb) return (pa ? 1 : 0) - (pb ? 1 : 0);
  return (
    pa.major - pb.major ||
    pa.minor - pb.minor ||
    pa.patch - pb.patch ||
    KIND_RANK[pa.kind] - KIND_RANK[pb.kind] ||
    pa.n - pb.n
  );
}

/** SPEC 4: the new-version tip shows when the local version is lower than the server's. */
export function isNewer(
  local: string | null | undefined,
  server: string | null | undefined,
): boolean {
  return parseVersion(server) !== null && compareVersions(local, server) < 0;
}

/** GL's spelling (`V1.9.0 release1`), or null when the text does not parse. */
export function formatVersion(text: string): string | null {
  const p = parseVersion(text);
  if (!p) return null;
  const base = `V${p.major}.${p.minor}.${p.patch}`;
  return p.kind === 'plain' ? base : `${base} ${p.kind}${p.n}`;
}

/** `GET /api/upgrade/version`. */
export interface UpgradeVersion {
  version: string;
  model: string;
}

/** `GET /api/upgrade/compare` (always 200; failures fill `error` / `beta_error`). */
export interface UpgradeCompare {
  local_model: string;
  local_version: string;
  server_model: string;
  server_version: string | null;
  release_note?: string;
  release_note_cn?: string;
  beta_version: string | null;
  beta_release_note?: string;
  beta_release_note_cn?: string;
  beta_error: string | null;
  error: string | null;
}

/** `GET /api/upgrade/download` and `beta/download`: answered once the size is known. */
export interface UpgradeDownloadStarted {
  size: number;
}

/** `GET /api/upgrade/download_info` (`{size:0,total_size:0}` when none). */
export interface UpgradeDownloadInfo {
  size: number;
  total_size: number;
}

/** `GET /api/upgrade/download_cancel`. */
export interface UpgradeDownloadCancel {
  status: 'success' | 'warning';
  message: string;
}

/** `POST /api/upgrade/upload`. */
export interface UpgradeUploaded {
  filename: string;
  size: number;
}

/**
 * `POST /api/upgrade/start?save_config=&skip_verify=` (GL 5.6/5.13): HTTP 200 in every case.
 * `id` and `version` are ours: `id` names this upgrade in `status.last_upgrade` after the
 * restart, `version` is the one being installed.
 */
export interface UpgradeStartResult {
  status: 'Upgrade started' | 'Upgrade failed';
  signature_valid?: boolean;
  firmware_valid?: boolean;
  message?: string;
  stdout: string;
  stderr: string;
  id?: string;
  version?: string;
}

/**
 * How an upgrade ended, written by the launcher once the new version was healthy (`success`)
 * or once the previous one was back (`failed`, with the reason).
 */
export interface UpgradeOutcome {
  id: string;
  result: 'success' | 'failed';
  from_version: string;
  to_version: string;
  /** Why it failed (the new version exited, was not healthy in time, …); null on success. */
  reason: string | null;
  /**
   * The same as a code with its values, for the console to say in its language (issue 21
   * item 17); null on success or for a reason without a code (then `reason` is shown).
   */
  reason_key?: RollbackReasonKey | null;
  /** Whether the upgrade started on a fresh data folder (save_config=false). */
  save_config: boolean;
  /** ISO time the outcome was decided. */
  finished_at: string;
}

/** Why the launcher rolled an upgrade back: a code and the values its text needs. */
export type RollbackReasonKey =
  | { code: 'exited'; exit_code: number | null }
  | { code: 'killed'; signal: string }
  | { code: 'not_ready'; seconds: number }
  /** Listening, but it reported problems (the server's own English lines, e.g. the network). */
  | { code: 'unhealthy'; problems: string[] };

/** `GET /api/upgrade/status`: GL's `enabled`, plus ours (extra fields GL clients ignore). */
export interface UpgradeStatus {
  enabled: true;
  /** The device runs under the launcher (npm start, systemd), so `start` can install. */
  can_install: boolean;
  /** An upgrade was started and the device is about to restart into it. */
  in_progress: boolean;
  /** The last upgrade's outcome, null before the first. */
  last_upgrade: UpgradeOutcome | null;
}
