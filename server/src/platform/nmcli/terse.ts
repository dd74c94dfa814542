/**
 * nmcli's terse output (`-t`), two shapes (NetworkManager clients/cli/utils.c):
 *
 * - Tabular (`device`, `device wifi list`, `connection show` without an id; also `-g`): one
 *   object per line, fields joined by `:`, and inside a field `:` and `\` are escaped with `\`
 *   (`-e yes`, the default). A BSSID therefore reads `AA\:BB\:CC\:DD\:EE\:FF`.
 * - Multiline (`device show`, `connection show <id>`): one `NAME:value` line per field, NOT
 *   escaped (only the first `:` separates), list fields numbered `IP4.DNS[1]`, `IP4.DNS[2]`,
 *   objects separated by an empty line. Older versions print an unset value as `--`.
 * Addresses and netmasks: protocol/src/network.ts, the one IPv4 module.
 */
import { prefixToNetmask } from '@kvm/protocol';

/** Splits one tabular terse line at unescaped `:` and unescapes `\:` and `\\`. */
export function splitTerse(line: string): string[] {
  const fields: string[] = [];
  let cur = '';
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === '\\' && i + 1 < line.length) {
      const next = line[i + 1];
      if (next === ':' || next === '\\') {
        cur += next;
        i++;
        continue;
      }
    }
    if (c === ':') {
      fields.push(cur);
      cur = '';
      continue;
    }
    cur += c;
  }
  fields.push(cur);
  return fields;
}

/** How many unescaped `:` (field separators) a tabular terse line holds. */
function separators(line: string): number {
  let n = 0;
  for (let i = 0; i < line.length; i++) {
    if (line[i] === '\\') i++;
    else if (line[i] === ':') n++;
  }
  return n;
}

/**
 * Tabular terse output: one array of `fieldCount` strings per row. nmcli escapes `:` and `\`
 * but not a line break, and an SSID may hold one (any bytes on air): a line short of separators
 * continues on the next one when the two together still fit one row.
 */
export function parseTable(stdout: string, fieldCount: number): string[][] {
  const rows: string[][] = [];
  const push = (line: string) => {
    const fields = splitTerse(line.replace(/\r$/, ''));
    while (fields.length < fieldCount) fields.push('');
    rows.push(fields);
  };
  const lines = stdout.split('\n');
  if (lines.at(-1) === '') lines.pop();
  let pending: string | null = null;
  for (const raw of lines) {
    if (pending !== null) {
      const joined: string = `${pending}\n${raw}`;
      if (separators(joined) <= fieldCount - 1) {
        if (separators(joined) < fieldCount - 1) pending = joined;
        else {
          push(joined);
          pending = null;
        }
        continue;
      }
      push(pending);
      pending = null;
    }
    if (raw.trim() === '') continue;
    if (separators(raw) < fieldCount - 1) pending = raw;
    else push(raw);
  }
  if (pending !== null) push(pending);
  return rows;
}

/** One object of multiline output: field name (without `[n]`) → its values, in order. */
export type TerseRecord = Map<string, string[]>;

/** Multiline terse output: the objects it holds (several when several ids were asked). */
export function parseRecords(stdout: string): TerseRecord[] {
  const records: TerseRecord[] = [];
  let cur: TerseRecord | null = null;
  for (const raw of stdout.split('\n')) {
    const line = raw.replace(/\r$/, '');
    if (line.trim() === '') {
      cur = null;
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const key = line.slice(0, colon).replace(/\[\d+\]$/, '');
    const value = line.slice(colon + 1);
    if (!cur) {
      cur = new Map();
      records.push(cur);
    }
    const list = cur.get(key);
    if (list) list.push(value);
    else cur.set(key, [value]);
  }
  return records;
}

/** The first value of `key`, '' when absent or unset (`--`). */
export function field(record: TerseRecord | undefined, key: string): string {
  const v = record?.get(key)?.[0] ?? '';
  return unset(v) ? '' : v;
}

/** Every set value of `key`. */
export function fields(record: TerseRecord | undefined, key: string): string[] {
  return (record?.get(key) ?? []).filter((v) => !unset(v));
}

function unset(v: string): boolean {
  const t = v.trim();
  return t === '' || t === '--';
}

/**
 * A MAC or an IPv4 value from multiline output: tolerant of a version that escapes it anyway
 * (`-g` does), since neither ever holds a backslash.
 */
export function plain(v: string): string {
  return v.replace(/\\/g, '').trim();
}

/** `GENERAL.STATE` `100 (connected)` → 100 (NMDeviceState); NaN when unreadable. */
export function deviceState(v: string): number {
  return Number.parseInt(v, 10);
}

/** NMDeviceState values the drivers read. */
export const NM_DEVICE_STATE = {
  unavailable: 20,
  disconnected: 30,
  prepare: 40,
  activated: 100,
  deactivating: 110,
  failed: 120,
} as const;

/** `192.168.1.34/24` → address and netmask. */
export function splitCidr(cidr: string): { ip: string; netmask: string } {
  const [ip = '', prefix] = plain(cidr).split('/');
  return { ip, netmask: prefix === undefined ? '' : prefixToNetmask(Number(prefix)) };
}

/** A property list as `connection show` prints it (`8.8.8.8,1.1.1.1` or `a, b`). */
export function splitList(v: string): string[] {
  return unset(v)
    ? []
    : plain(v)
        .split(/[,\s]+/)
        .filter((s) => s !== '');
}
