import { useEffect, useState } from 'react';
import { Button, Input, Space, Spin, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import type { TwoFaCreateResult } from '@kvm/protocol/api';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { api, ApiError, errorMessage } from '../../lib/api';
import { fetchTwoFaState } from '../session/session-actions';
import { useSession } from '../session/session-store';
import { twoFaCodeError } from '../auth/twofa-code';
import { forgetUsedCode, rememberUsedCode, wasCodeJustUsed } from '../auth/dynamic-code';
import { qrDataUrl } from './qr';
import { useMessage } from '../../components/notify';

interface Enrolment extends TwoFaCreateResult {
  qr: string | null;
}

/**
 * SPEC 4 two-factor: off or on. On by scanning the QR code (or typing the text code) and
 * confirming with a current 6-digit code; off after a confirmation with a current code too
 * (the server refuses `2fa/delete` without one, so a stolen session cannot drop the factor).
 */
export function TwoFaSettings() {
  const { t } = useTranslation();
  const message = useMessage();
  const enabled = useSession((s) => s.twofaEnabled);
  const [enrolment, setEnrolment] = useState<Enrolment | null>(null);
  const [code, setCode] = useState('');
  const [codeError, setCodeError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [confirmOff, setConfirmOff] = useState(false);
  const [offCode, setOffCode] = useState('');
  const [offCodeError, setOffCodeError] = useState<string | null>(null);

  useEffect(() => {
    fetchTwoFaState().catch(() => undefined);
  }, []);

  const start = async () => {
    setBusy(true);
    try {
      const created = await api.get<TwoFaCreateResult>('/2fa/create');
      setEnrolment({ ...created, qr: null });
      setCode('');
      setCodeError(null);
      const qr = await qrDataUrl(created.uri).catch(() => null);
      setEnrolment((current) =>
        current?.secret === created.secret ? { ...current, qr } : current,
      );
    } catch (err) {
      void message.error(errorMessage(err, t('common.settingFailed')));
    } finally {
      setBusy(false);
    }
  };

  const confirm = async () => {
    if (!enrolment) return;
    const invalid = twoFaCodeError(code);
    if (invalid) return setCodeError(t(invalid));
    setCodeError(null);
    setBusy(true);
    try {
      await api.get('/2fa/init', { query: { secret: enrolment.secret, key: code } });
      rememberUsedCode(code);
      useSession.setState({ twofaEnabled: true });
      setEnrolment(null);
      void message.success(t('settings.security.twofaEnabledToast'));
    } catch {
      // SPEC 8: the server says only 403; the likely cause is the code.
      void message.error(t('settings.security.twofaSetFailed'));
    } finally {
      setBusy(false);
    }
  };

  const turnOff = async () => {
    const invalid = twoFaCodeError(offCode);
    if (invalid) {
      setOffCodeError(t(invalid));
      throw new Error(invalid); // Keeps the confirmation open.
    }
    if (wasCodeJustUsed(offCode)) {
      // Just used to log in or to turn 2FA on: the server would take it for a wrong one.
      setOffCodeError(t('twofa.codeUsed'));
      throw new Error('twofa.codeUsed'); // Keeps the confirmation open.
    }
    setOffCodeError(null);
    try {
      await api.get('/2fa/delete', { query: { code: offCode } });
    } catch (err) {
      // 403 is a wrong (or already used) code; a lock (429) and the rest say the server's words.
      if (err instanceof ApiError && err.status === 403) setOffCodeError(t('twofa.codeInvalid'));
      else void message.error(errorMessage(err, t('common.settingFailed')));
      throw err;
    }
    forgetUsedCode();
    useSession.setState({ twofaEnabled: false });
    setConfirmOff(false);
    setOffCode('');
    void message.success(t('settings.security.twofaDisabledToast'));
  };

  const closeOff = () => {
    setConfirmOff(false);
    setOffCode('');
    setOffCodeError(null);
  };

  return (
    <div>
      <Typography.Paragraph data-testid="twofa-status" strong>
        {t(enabled ? 'settings.security.twofaEnabled' : 'settings.security.twofaDisabled')}
      </Typography.Paragraph>

      {enabled && (
        <Button danger onClick={() => setConfirmOff(true)} data-testid="twofa-disable">
          {t('settings.security.twofaDisable')}
        </Button>
      )}

      {!enabled && !enrolment && (
        <Button onClick={() => void start()} loading={busy} data-testid="twofa-enable">
          {t('settings.security.twofaEnable')}
        </Button>
      )}

      {!enabled && enrolment && (
        <Space orientation="vertical" style={{ width: '100%' }}>
          <Typography.Text type="secondary">{t('settings.security.twofaScan')}</Typography.Text>
          <div style={{ width: 192, height: 192, display: 'grid', placeItems: 'center' }}>
            {enrolment.qr ? (
              <img
                src={enrolment.qr}
                width={192}
                height={192}
                alt="otpauth QR"
                data-testid="twofa-qr"
              />
            ) : (
              <Spin />
            )}
          </div>
          <Typography.Text>{t('settings.security.twofaSecret')}:</Typography.Text>
          <Typography.Text code copyable data-testid="twofa-secret">
            {enrolment.secret}
          </Typography.Text>
          <CodeInput
            value={code}
            onChange={setCode}
            onEnter={() => void confirm()}
            error={codeError}
            testId="twofa-enable-code"
          />
          <Space>
            <Button
              type="primary"
              loading={busy}
              onClick={() => void confirm()}
              data-testid="twofa-enable-submit"
            >
              {t('settings.security.twofaConfirm')}
            </Button>
            <Button onClick={() => setEnrolment(null)} disabled={busy}>
              {t('common.cancel')}
            </Button>
          </Space>
        </Space>
      )}

      <ConfirmDialog
        open={confirmOff}
        okText={t('settings.security.twofaDisable')}
        onConfirm={turnOff}
        onCancel={closeOff}
      >
        <Space orientation="vertical" style={{ width: '100%' }}>
          <Typography.Text>{t('settings.security.twofaDisableConfirm')}</Typography.Text>
          <Typography.Text type="secondary">
            {t('settings.security.twofaDisableCodePrompt')}
          </Typography.Text>
          <CodeInput
            value={offCode}
            onChange={setOffCode}
            error={offCodeError}
            testId="twofa-disable-code"
          />
        </Space>
      </ConfirmDialog>
    </div>
  );
}

/** A 6-digit one-time code field and its error line (`<testId>-error`). */
function CodeInput(props: {
  value: string;
  onChange: (code: string) => void;
  onEnter?: () => void;
  error: string | null | undefined;
  testId: string;
}) {
  const { t } = useTranslation();
  return (
    <>
      <Input
        value={props.value}
        onChange={(e) => props.onChange(e.target.value.trim())}
        onPressEnter={props.onEnter}
        placeholder={t('twofa.code')}
        inputMode="numeric"
        autoComplete="one-time-code"
        maxLength={6}
        status={props.error ? 'error' : undefined}
        data-testid={props.testId}
      />
      {props.error && (
        <Typography.Text type="danger" data-testid={`${props.testId}-error`}>
          {props.error}
        </Typography.Text>
      )}
    </>
  );
}
