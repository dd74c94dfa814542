/**
 * TLS toward the fleet (docs/cloud.md, docs/security.md "Cloud"): every call and the agent
 * socket verify the certificate. A fleet the system's CAs vouch for needs nothing; one they do
 * not (a self-hosted fleet's own certificate) is pinned: its certificate becomes the only trust
 * anchor and its SHA-256 fingerprint is compared on every connection, so a changed certificate
 * is refused even when it would otherwise verify. The one connection that does not verify is
 * the probe, which only reads the certificate to show it and sends nothing.
 */
import { X509Certificate } from 'node:crypto';
import { connect, type ConnectionOptions, type PeerCertificate } from 'node:tls';
import type { CloudServerProbe } from '@kvm/protocol';
import { BadGatewayError, GatewayTimeoutError, ValidatorError } from '../../errors';

/** The trust of one fleet: the pinned certificate, or the system's CAs. */
export interface FleetTrust {
  pinned: string | null;
  pinnedCert: string | null;
}

/** A fleet URL as the panel may set it: https, a host, no credentials, no path but `/`. */
export function parseFleetUrl(text: unknown): URL {
  if (typeof text !== 'string' || text.length === 0 || text.length > 2000) {
    throw new ValidatorError("The argument 'url' must be the fleet's https:// address");
  }
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    throw new ValidatorError("The argument 'url' is not a valid URL");
  }
  if (url.protocol !== 'https:') {
    throw new ValidatorError("The argument 'url' must use https:// (TLS is always verified)");
  }
  if (
    url.username ||
    url.password ||
    url.search ||
    url.hash ||
    (url.pathname !== '/' && url.pathname !== '')
  ) {
    throw new ValidatorError("The argument 'url' must be https://host[:port] only");
  }
  return url;
}

/** `https://host[:port]` of a parsed fleet URL. */
export function fleetOrigin(url: URL): string {
  return url.origin;
}

/** A SHA-256 fingerprint as Node prints it: upper-case hex pairs joined by colons. */
export function normalizeFingerprint(text: unknown): string | null {
  if (typeof text !== 'string') return null;
  const hex = text.replace(/[:\s]/g, '').toUpperCase();
  if (!/^[0-9A-F]{64}$/.test(hex)) return null;
  return hex.match(/../g)!.join(':');
}

function isIp(host: string): boolean {
  return /^[\d.]+$/.test(host) || host.includes(':');
}

/** Node's TLS options for a connection to the fleet under `trust`. */
export function fleetTlsOptions(trust: FleetTrust): ConnectionOptions {
  if (trust.pinned === null || trust.pinnedCert === null) return { rejectUnauthorized: true };
  const pinned = trust.pinned;
  return {
    rejectUnauthorized: true,
    ca: [trust.pinnedCert],
    // a pinned leaf signed by a private CA is a trust anchor of its own
    allowPartialTrustChain: true,
    // the exact certificate is the identity: its name need not match the address used
    checkServerIdentity: (_host: string, cert: PeerCertificate) =>
      cert.fingerprint256 === pinned
        ? undefined
        : new CloudCertificateChangedError(pinned, cert.fingerprint256),
  } as ConnectionOptions;
}

/** The pinned certificate is not the one the fleet shows now. */
export class CloudCertificateChangedError extends BadGatewayError {
  constructor(pinned: string, seen: string | undefined) {
    super(
      `The fleet's certificate changed: pinned ${pinned}, shown ${seen ?? 'none'}. ` +
        'Refused; set the server again to check and pin the new certificate.',
    );
  }
}

/** The fleet could not be reached (address, refused, TLS). */
export class CloudUnreachableError extends BadGatewayError {}

/** The fleet did not answer within the cloud timeout. */
export class CloudTimeoutError extends GatewayTimeoutError {}

const TLS_TRUST_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_GET_ISSUER_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_SIGNATURE_FAILURE',
]);

/**
 * A connection error toward the fleet as the panel shows it: a certificate the device does not
 * trust (or no longer the pinned one) says so; the rest is "unreachable" with the cause.
 */
export function fleetConnectError(err: unknown, trust: FleetTrust): Error {
  if (err instanceof CloudCertificateChangedError) return err;
  const code = (err as NodeJS.ErrnoException).code ?? '';
  if (TLS_TRUST_CODES.has(code)) {
    if (trust.pinned !== null) {
      return new CloudCertificateChangedError(trust.pinned, undefined);
    }
    return new CloudUnreachableError(
      `The fleet's certificate is not trusted (${code}); set the server again to see its fingerprint and pin it`,
    );
  }
  const message = (err as Error).message ?? String(err);
  return new CloudUnreachableError(`The fleet could not be reached: ${code || message}`);
}

function describeName(name: unknown): string {
  if (!name || typeof name !== 'object') return '';
  return Object.entries(name as Record<string, unknown>)
    .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join('+') : String(v)}`)
    .join(', ');
}

/** PEM of a DER certificate. */
function pemOf(der: Buffer): string {
  return new X509Certificate(der).toString();
}

/**
 * Reads the fleet's certificate (no request is sent): trusted when its chain verifies against
 * the system's CAs and its name matches the host. Also returns the PEM, kept by the caller for
 * a pin the admin may ask for next (never in an answer).
 */
export function probeFleet(
  url: URL,
  timeoutMs: number,
): Promise<{ probe: CloudServerProbe; pem: string }> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = Number(url.port || 443);
  return new Promise((resolve, reject) => {
    const socket = connect({
      host,
      port,
      ...(isIp(host) ? {} : { servername: host }),
      // read only: the certificate is shown, nothing is sent over this connection
      rejectUnauthorized: false,
    });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new CloudTimeoutError(`The fleet did not answer within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once('secureConnect', () => {
      clearTimeout(timer);
      const cert = socket.getPeerCertificate(true);
      const trusted = socket.authorized;
      socket.end();
      if (!cert || !cert.raw) {
        reject(new CloudUnreachableError('The fleet showed no certificate'));
        return;
      }
      resolve({
        probe: {
          url: fleetOrigin(url),
          trusted,
          fingerprint: cert.fingerprint256,
          subject: describeName(cert.subject),
          issuer: describeName(cert.issuer),
          valid_to: cert.valid_to,
        },
        pem: pemOf(cert.raw),
      });
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(fleetConnectError(err, { pinned: null, pinnedCert: null }));
    });
  });
}
