/**
 * Sending one alert: a webhook is POSTed the payload as JSON, signed
 * (`X-Fleet-Signature: sha256=<hex HMAC-SHA256 of the body>`), within WEBHOOK_TIMEOUT_MS, redirects
 * not followed and at most WEBHOOK_READ_MAX bytes of the answer read; an e-mail goes through the
 * fleet's mailer with the payload's text as its subject.
 */
import { createHmac } from 'node:crypto';
import type { FleetAlertPayload } from '@kvm/protocol';
import type { Mailer } from '../accounts/mailer';

export const WEBHOOK_TIMEOUT_MS = 5000;
export const WEBHOOK_READ_MAX = 4096;

/** The signature header's value for `body` (what a receiver computes to check it). */
export function signature(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** Throws (with the reason to store) unless the receiver answered 2xx in time. */
export async function postWebhook(url: string, secret: string, body: string): Promise<void> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'user-agent': 'kvm-fleet-alerts',
      'x-fleet-signature': signature(secret, body),
    },
    body,
    redirect: 'manual',
    signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
  });
  // at most WEBHOOK_READ_MAX bytes of the answer, for the error message; the rest is dropped
  const chunks: Uint8Array[] = [];
  let got = 0;
  const reader = res.body?.getReader();
  if (reader) {
    try {
      while (got < WEBHOOK_READ_MAX) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value);
        got += value.length;
      }
    } finally {
      await reader.cancel().catch(() => {});
    }
  }
  if (res.status < 200 || res.status > 299) {
    const text = Buffer.concat(chunks).subarray(0, WEBHOOK_READ_MAX).toString('utf8');
    const first = text.replace(/\s+/g, ' ').trim().slice(0, 200);
    throw new Error(`HTTP ${res.status}${first ? `: ${first}` : ''}`);
  }
}

/** The e-mail's body: the text, then what it is about, one fact a line. */
export function mailBody(p: FleetAlertPayload): string {
  const lines = [p.text, '', `event: ${p.event}`, `at: ${new Date(p.at).toISOString()}`];
  if (p.device) {
    lines.push(`device: ${p.device.name} (${p.device.id})`);
    if (p.device.last_seen !== null) {
      lines.push(`last seen: ${new Date(p.device.last_seen).toISOString()}`);
    }
  }
  if (p.job) lines.push(`job: ${p.job.name} (${p.job.id})`, `reason: ${p.job.reason}`);
  return `${lines.join('\n')}\n`;
}

export async function sendMail(mailer: Mailer, to: string, p: FleetAlertPayload): Promise<void> {
  await mailer.send(to, p.text, mailBody(p));
}

/** Why a send failed, in one short line. */
export function failureText(e: unknown): string {
  const err = e as { name?: string; message?: string; cause?: { message?: string } };
  if (err.name === 'TimeoutError') return `no answer within ${WEBHOOK_TIMEOUT_MS / 1000} s`;
  const msg = err.cause?.message ? `${err.message}: ${err.cause.message}` : err.message;
  return String(msg ?? e).slice(0, 500);
}
