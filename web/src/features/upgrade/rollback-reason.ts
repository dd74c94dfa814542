/**
 * Why an upgrade was rolled back, in the console's language (issue 21 item 17): the launcher
 * writes an English `reason` and a `reason_key` (code and values, protocol/upgrade.ts); the key
 * is translated here, and an outcome without one (an older server) shows its English text.
 */
import type { TFunction } from 'i18next';
import type { UpgradeOutcome } from '@kvm/protocol/upgrade';

export function rollbackReasonText(
  outcome: Pick<UpgradeOutcome, 'reason' | 'reason_key' | 'to_version'>,
  t: TFunction,
): string | null {
  const key = outcome.reason_key;
  const version = outcome.to_version;
  if (!key) return outcome.reason;
  switch (key.code) {
    case 'exited':
      return key.exit_code === null
        ? t('upgrade.rollback.exitedNoCode', { version })
        : t('upgrade.rollback.exited', { version, code: key.exit_code });
    case 'killed':
      return t('upgrade.rollback.killed', { version, signal: key.signal });
    case 'not_ready':
      return t('upgrade.rollback.notReady', { version, seconds: key.seconds });
    case 'unhealthy':
      // The problems are the server's own lines (its log's words): shown as they are.
      return t('upgrade.rollback.unhealthy', { version, problems: key.problems.join('; ') });
    default:
      return outcome.reason;
  }
}
