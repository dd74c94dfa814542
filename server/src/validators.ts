/**
 * kvmd-style argument validators (wire-protocol.md 1.1). Each names the argument in its
 * message; hidden arguments (passwords, codes, tokens) never echo their value.
 */
import { isPlainText, parseFiniteNumber, PLAIN_TEXT_PUNCTUATION } from '@kvm/protocol';
import { ValidatorError } from './errors';

type Raw = unknown;

function describe(name: string, value: Raw, what: string, hidden: boolean): string {
  if (hidden || value === undefined || value === null) {
    return `The argument '${name}' is not a valid ${what}`;
  }
  const shown = typeof value === 'string' ? value : JSON.stringify(value);
  const clipped = shown.length > 64 ? `${shown.slice(0, 64)}...` : shown;
  return `The argument '${name}' (${JSON.stringify(clipped)}) is not a valid ${what}`;
}

export function fail(name: string, value: Raw, what: string, hidden = false): never {
  throw new ValidatorError(describe(name, value, what, hidden));
}

/** A request's query arguments as Fastify parsed them (none: empty), for the validators below. */
export function queryOf(request: { query: unknown }): Record<string, unknown> {
  return (request.query ?? {}) as Record<string, unknown>;
}

/** A single string argument; arrays (repeated query keys) are refused. */
export function str(
  name: string,
  value: Raw,
  opts: { hidden?: boolean; optional?: boolean } = {},
): string {
  if (value === undefined && opts.optional) return '';
  if (typeof value !== 'string') fail(name, value, 'string', opts.hidden);
  return value;
}

const TRUE = new Set(['1', 'true', 'yes']);
const FALSE = new Set(['0', 'false', 'no']);

/** kvmd booleans: 1|true|yes and 0|false|no, case-insensitive, stripped. */
export function bool(name: string, value: Raw, fallback?: boolean): boolean {
  if ((value === undefined || value === '') && fallback !== undefined) return fallback;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string') {
    const v = value.trim().toLowerCase();
    if (TRUE.has(v)) return true;
    if (FALSE.has(v)) return false;
  }
  return fail(name, value, "bool (['1', 'true', 'yes'] or ['0', 'false', 'no'])");
}

/** An integer, decimal or 0x hex, within [min, max]. */
export function int(
  name: string,
  value: Raw,
  opts: { min?: number; max?: number; fallback?: number } = {},
): number {
  if ((value === undefined || value === '') && opts.fallback !== undefined) return opts.fallback;
  let n = Number.NaN;
  if (typeof value === 'number') n = value;
  else if (typeof value === 'string') {
    const v = value.trim();
    if (/^[+-]?\d+$/.test(v)) n = Number.parseInt(v, 10);
    else if (/^0x[0-9a-f]+$/i.test(v)) n = Number.parseInt(v.slice(2), 16);
  }
  if (!Number.isSafeInteger(n)) fail(name, value, 'int');
  if (opts.min !== undefined && n < opts.min) fail(name, value, `int >= ${opts.min}`);
  if (opts.max !== undefined && n > opts.max) fail(name, value, `int <= ${opts.max}`);
  return n;
}

/**
 * A finite decimal number (SPEC 5's numeric check: `parseFiniteNumber`), within [min, max];
 * `what` names the kind in the message (kvmd's `float >= 0` and the like).
 */
export function float(
  name: string,
  value: Raw,
  opts: { min?: number; max?: number; fallback?: number; what?: string } = {},
): number {
  if ((value === undefined || value === '') && opts.fallback !== undefined) return opts.fallback;
  const n = typeof value === 'string' ? parseFiniteNumber(value) : null;
  const what =
    opts.what ??
    (opts.min !== undefined && opts.max !== undefined
      ? `float in [${opts.min}, ${opts.max}]`
      : opts.min !== undefined
        ? `float >= ${opts.min}`
        : 'float');
  if (n === null) return fail(name, value, what);
  if (opts.min !== undefined && n < opts.min) fail(name, value, what);
  if (opts.max !== undefined && n > opts.max) fail(name, value, what);
  return n;
}

/**
 * Free text SPEC 5's text pattern allows (`isPlainText`): ASCII letters, digits, the space and
 * some punctuation, at most `max` characters.
 */
export function plainText(name: string, value: Raw, opts: { max: number }): string {
  const v = str(name, value);
  if (!isPlainText(v, opts.max)) {
    fail(
      name,
      value,
      `text (at most ${opts.max} ASCII letters, digits, spaces and ${PLAIN_TEXT_PUNCTUATION})`,
    );
  }
  return v;
}

/** One of a fixed set of strings. */
export function oneOf<T extends string>(name: string, value: Raw, allowed: readonly T[]): T {
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value))
    return value as T;
  return fail(name, value, `value of [${allowed.join(', ')}]`);
}
