/**
 * What counts as a finding. An HTTP answer is wrong when it is a 5xx that is not on the
 * documented list, when an error (status >= 400) is not the kvmd envelope
 * `{ok:false,result:{error,error_msg}}`, or when a 200 carries `ok:false`. Sockets: the server
 * must keep answering a probe and never close with 1011 (internal error). Findings are
 * deduplicated by a key (kind, route, status, error name) and keep their first example.
 */

/**
 * The 5xx answers the docs promise (docs/api.md, docs/msd.md), by status; `*` = any error name.
 * 503: unavailable (login hashing queue full, console not built, ...); 507: no space left;
 * 500 only for the drivers' documented refusals.
 */
export const DOCUMENTED_5XX: Record<number, readonly string[]> = {
  503: ['*'],
  507: ['MsdNoSpaceError', 'InsufficientStorageError'],
  500: ['MsdConnectError', 'MsdDisconnectError', 'WolSendError'],
};

export interface HttpAnswer {
  status: number;
  contentType: string;
  body: Buffer;
}

export interface Finding {
  kind: string;
  where: string;
  detail: string;
  count: number;
  example: string;
}

export type Verdict = { ok: true } | { ok: false; kind: string; detail: string };

function envelopeError(body: Buffer): { error: string; msg: string } | null {
  try {
    const json = JSON.parse(body.toString('utf8')) as {
      ok?: unknown;
      result?: { error?: unknown; error_msg?: unknown };
    };
    if (
      json?.ok === false &&
      typeof json.result?.error === 'string' &&
      typeof json.result.error_msg === 'string'
    ) {
      return { error: json.result.error, msg: json.result.error_msg };
    }
  } catch {
    // not JSON
  }
  return null;
}

/**
 * The API surface (`/api`, `/janus`) answers errors in the envelope; other paths are the
 * console's file server, whose 404 for a missing file is plain text (http/static.ts): there
 * only the status is judged.
 */
export function isApiUrl(url: string): boolean {
  return /^\/(api|janus)(\/|\?|$)/.test(url);
}

export function judgeHttp(method: string, url: string, answer: HttpAnswer): Verdict {
  const { status } = answer;
  if (!isApiUrl(url)) {
    return status >= 500 && status !== 503
      ? { ok: false, kind: `http-${status}`, detail: snippet(answer.body) }
      : { ok: true };
  }
  if (status >= 400) {
    // A HEAD answer has no body to judge; its status still counts.
    const env = method === 'HEAD' ? { error: '*', msg: '' } : envelopeError(answer.body);
    if (status >= 500) {
      const allowed = DOCUMENTED_5XX[status];
      if (!allowed || !env || !(allowed.includes('*') || allowed.includes(env.error))) {
        return {
          ok: false,
          kind: `http-${status}`,
          detail: env ? `${env.error}: ${env.msg}` : snippet(answer.body),
        };
      }
      return { ok: true };
    }
    if (!env) {
      return {
        ok: false,
        kind: 'non-envelope-error',
        detail: `${status} ${answer.contentType} ${snippet(answer.body)}`,
      };
    }
    return { ok: true };
  }
  if (status === 200 && answer.contentType.includes('json') && envelopeError(answer.body)) {
    return { ok: false, kind: 'error-with-200', detail: snippet(answer.body) };
  }
  return { ok: true };
}

export function snippet(data: Buffer | string, max = 200): string {
  const text = typeof data === 'string' ? data : data.toString('utf8');
  return text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text;
}

/** Findings, deduplicated by (kind, where, detail). */
export class Findings {
  private readonly map = new Map<string, Finding>();

  add(kind: string, where: string, detail: string, example: string): void {
    // Numbers in messages (ids, sizes, seconds) would defeat the dedup key.
    const key = `${kind}|${where}|${detail.replace(/\d+/g, 'N').slice(0, 160)}`;
    const f = this.map.get(key);
    if (f) f.count += 1;
    else this.map.set(key, { kind, where, detail, count: 1, example });
  }

  get size(): number {
    return this.map.size;
  }

  list(): Finding[] {
    return [...this.map.values()];
  }
}
