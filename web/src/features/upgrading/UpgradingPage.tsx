import { useEffect, useRef, useState } from 'react';
import { Button, Progress, Result, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { ApiError, isAuthDenied } from '../../lib/api';
import { assignPath } from '../../lib/base';
import { getUpgradeStatus, getVersion } from '../upgrade/upgrade-api';
import { rollbackReasonText } from '../upgrade/rollback-reason';
import type { UpgradeOutcome } from '@kvm/protocol/upgrade';
import {
  UPGRADE_FROM_KEY,
  UPGRADE_ID_KEY,
  UPGRADE_SAVE_CONFIG_KEY,
} from '../upgrade/upgrade-store';
import {
  UPGRADE_DONE_RELOAD_MS,
  UPGRADE_GIVE_UP_MS,
  UPGRADE_OUTCOME_GRACE_MS,
  UPGRADE_POLL_DELAY_MS,
  UPGRADE_POLL_MS,
  upgradeProgress,
} from './progress';

const TICK_MS = 500;

type Phase = 'running' | 'done' | 'failed';

function readSession(key: string): string | null {
  try {
    return sessionStorage.getItem(key);
  } catch {
    return null;
  }
}

function toRoot(): void {
  assignPath('/');
}

export interface UpgradingPageProps {
  /** Where success and OK lead; tests pass a spy. Default: a full load of the site root. */
  goRoot?: () => void;
}

/**
 * SPEC 2 upgrading page: progress toward 99 % over about 82 s, 'do not refresh', and from 2 s
 * on the device's upgrade status polled every second. The launcher records how the upgrade
 * ended under the id start answered (kept in session storage): `success` is done, `failed` (the
 * previous version is back) shows the device's reason. Without that id or that record the
 * version decides: another one than before the upgrade is done, the same one after the device
 * was gone is a rollback. With save_config=false the new version has forgotten the session,
 * so a 401 is done (after a rollback the old data folder, and the session, are back).
 */
export default function UpgradingPage({ goRoot = toRoot }: UpgradingPageProps) {
  const { t } = useTranslation();
  const [percent, setPercent] = useState(0);
  const [phase, setPhase] = useState<Phase>('running');
  // The failed outcome (translated when shown: its reason key follows the language).
  const [failed, setFailed] = useState<UpgradeOutcome | null>(null);
  const phaseRef = useRef<Phase>('running');

  useEffect(() => {
    const started = Date.now();
    const id = readSession(UPGRADE_ID_KEY);
    const from = readSession(UPGRADE_FROM_KEY);
    const freshData = readSession(UPGRADE_SAVE_CONFIG_KEY) === '0';
    // The device went away at least once (it restarted): only then is "same version" final.
    let restarted = false;
    // When the device, back after its restart, first answered without this upgrade's outcome.
    let backSince: number | null = null;
    // The device has no status route: its version decides.
    let noStatus = false;
    let inFlight = false;
    let reloadTimer: ReturnType<typeof setTimeout> | undefined;
    const controller = new AbortController();

    const finish = (next: Phase, why: UpgradeOutcome | null = null) => {
      if (phaseRef.current !== 'running') return;
      phaseRef.current = next;
      setPhase(next);
      setFailed(why);
      if (next === 'done') {
        setPercent(100);
        reloadTimer = setTimeout(goRoot, UPGRADE_DONE_RELOAD_MS);
      }
    };

    const byVersion = async () => {
      const { version } = await getVersion(controller.signal);
      if (from === null || version !== from) finish('done');
      else if (restarted) finish('failed');
    };

    const byStatus = async () => {
      const { last_upgrade: last } = await getUpgradeStatus(controller.signal);
      if (id !== null && last?.id === id) {
        if (last.result === 'success') finish('done');
        else finish('failed', last);
        return;
      }
      if (id === null || last === undefined) return byVersion();
      // Not decided yet: the old version before its restart, or the new one before the launcher
      // saw it ready. A launcher that never records it leaves the version to decide.
      if (!restarted) return;
      backSince ??= Date.now();
      if (Date.now() - backSince >= UPGRADE_OUTCOME_GRACE_MS) await byVersion();
    };

    const poll = async () => {
      if (inFlight || phaseRef.current !== 'running') return;
      inFlight = true;
      try {
        await (noStatus ? byVersion() : byStatus());
      } catch (err) {
        if (controller.signal.aborted) return;
        // The session was valid when start answered: a 401 now comes from a fresh data folder,
        // that is the new version (a rollback brings the old folder and the session back).
        if (isAuthDenied(err)) {
          if (freshData) finish('done');
        } else if (!(err instanceof ApiError) || err.status >= 500) {
          // Gone or restarting.
          restarted = true;
          backSince = null;
        } else if (!noStatus) noStatus = true;
      } finally {
        inFlight = false;
      }
    };

    const ticker = setInterval(() => {
      const elapsed = Date.now() - started;
      if (phaseRef.current === 'running') setPercent(upgradeProgress(elapsed));
      if (elapsed >= UPGRADE_GIVE_UP_MS) finish('failed');
    }, TICK_MS);
    let poller: ReturnType<typeof setInterval> | undefined;
    const delay = setTimeout(() => {
      void poll();
      poller = setInterval(() => void poll(), UPGRADE_POLL_MS);
    }, UPGRADE_POLL_DELAY_MS);

    return () => {
      controller.abort();
      clearInterval(ticker);
      clearTimeout(delay);
      if (poller) clearInterval(poller);
      if (reloadTimer) clearTimeout(reloadTimer);
    };
  }, [goRoot]);

  if (phase === 'failed') {
    const reason = failed ? rollbackReasonText(failed, t) : null;
    return (
      <Result
        data-testid="upgrading-failed"
        status="error"
        title={t('main.upgradeFailed')}
        subTitle={t('upgrading.failedTips')}
        extra={
          <Button type="primary" onClick={goRoot} data-testid="upgrading-ok">
            {t('common.ok')}
          </Button>
        }
      >
        {reason && (
          <Typography.Paragraph data-testid="upgrading-reason" style={{ margin: 0 }}>
            {reason}
          </Typography.Paragraph>
        )}
      </Result>
    );
  }

  return (
    <div
      data-testid="upgrading-page"
      data-phase={phase}
      data-percent={percent}
      style={{
        minHeight: '100%',
        display: 'flex',
        flexDirection: 'column',
        alignItems: 'center',
        justifyContent: 'center',
        gap: 16,
        padding: 24,
        textAlign: 'center',
      }}
    >
      <Typography.Title level={3}>
        {phase === 'done' ? t('upgrading.success') : t('upgrading.title')}
      </Typography.Title>
      <Progress type="circle" percent={percent} data-testid="upgrading-progress" />
      <Typography.Text type="warning">{t('upgrading.doNotRefresh')}</Typography.Text>
    </div>
  );
}
