import { useEffect, useRef, useState } from 'react';
import { Button, Progress, Result, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { ApiError, isAuthDenied } from '../../lib/api';
import { getVersion } from '../upgrade/upgrade-api';
import { UPGRADE_FROM_KEY, UPGRADE_SAVE_CONFIG_KEY } from '../upgrade/upgrade-store';
import {
  UPGRADE_DONE_RELOAD_MS,
  UPGRADE_GIVE_UP_MS,
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
  window.location.assign('/');
}

export interface UpgradingPageProps {
  /** Where success and OK lead; tests pass a spy. Default: a full load of the site root. */
  goRoot?: () => void;
}

/**
 * SPEC 2 upgrading page: progress toward 99 % over about 82 s, 'do not refresh', and from 2 s
 * on the device's version polled every second. Done is another version than the one before
 * the upgrade (remembered in session storage when it started); the same version answering after
 * the device was gone means the new one did not come up and the old one came back (rollback).
 */
export default function UpgradingPage({ goRoot = toRoot }: UpgradingPageProps) {
  const { t } = useTranslation();
  const [percent, setPercent] = useState(0);
  const [phase, setPhase] = useState<Phase>('running');
  const phaseRef = useRef<Phase>('running');

  useEffect(() => {
    const started = Date.now();
    const from = readSession(UPGRADE_FROM_KEY);
    const freshData = readSession(UPGRADE_SAVE_CONFIG_KEY) === '0';
    // The device went away at least once (it restarted): only then is "same version" final.
    let restarted = false;
    let inFlight = false;
    let reloadTimer: ReturnType<typeof setTimeout> | undefined;
    const controller = new AbortController();

    const finish = (next: Phase) => {
      if (phaseRef.current !== 'running') return;
      phaseRef.current = next;
      setPhase(next);
      if (next === 'done') {
        setPercent(100);
        reloadTimer = setTimeout(goRoot, UPGRADE_DONE_RELOAD_MS);
      }
    };

    const poll = async () => {
      if (inFlight || phaseRef.current !== 'running') return;
      inFlight = true;
      try {
        const { version } = await getVersion(controller.signal);
        if (from === null || version !== from) finish('done');
        else if (restarted) finish('failed');
      } catch (err) {
        if (controller.signal.aborted) return;
        // Without its old data folder the device has forgotten the session: it is the new one.
        if (isAuthDenied(err) && restarted && freshData) finish('done');
        else if (!(err instanceof ApiError) || err.status >= 500) restarted = true;
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
      />
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
