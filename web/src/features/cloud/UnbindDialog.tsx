import { useEffect, useState } from 'react';
import { Input, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { TWOFA_CODE_LENGTH } from '@kvm/protocol/constants';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { useMessage } from '../../components/notify';
import { ApiError, withDetail } from '../../lib/api';
import { twoFaCodeError } from '../auth/twofa-code';
import { fetchTwoFaState } from '../session/session-actions';
import { useSession } from '../session/session-store';
import { Field } from './AccountForms';
import { unbind } from './cloud-store';

/**
 * SPEC 4: unbinding needs the admin password, plus the 2FA code when 2FA is on; SPEC 8: a wrong
 * one says "unbind failed". The device tells the fleet and forgets its secret.
 */
export function UnbindDialog({ onClose }: { onClose: () => void }) {
  const { t } = useTranslation();
  const message = useMessage();
  const twofa = useSession((s) => s.twofaEnabled);
  const [passwd, setPasswd] = useState('');
  const [code, setCode] = useState('');
  const [errors, setErrors] = useState<{ passwd?: string; code?: string }>({});
  const [failure, setFailure] = useState<string | null>(null);

  // Mounted when it opens: every opening starts empty.
  useEffect(() => {
    fetchTwoFaState().catch(() => undefined);
  }, []);

  const confirm = async () => {
    const codeInvalid = twofa ? twoFaCodeError(code) : null;
    const found = {
      ...(passwd ? {} : { passwd: t('cloud.unbind.passwordRequired') }),
      ...(codeInvalid ? { code: t(codeInvalid) } : {}),
    };
    setErrors(found);
    if (found.passwd || found.code) throw new Error('invalid');
    setFailure(null);
    try {
      await unbind(passwd, twofa ? code : null);
    } catch (err) {
      // 403: the password or the code was wrong (the device says only that).
      const text =
        err instanceof ApiError && err.status === 403
          ? t('cloud.unbind.failed')
          : withDetail(t('cloud.unbind.error'), err);
      setFailure(text);
      void message.error(text);
      throw err;
    }
    void message.success(t('cloud.unbind.done'));
    onClose();
  };

  return (
    <ConfirmDialog open okText={t('cloud.unbind.button')} onConfirm={confirm} onCancel={onClose}>
      <div data-testid="cloud-unbind-dialog">
        <Typography.Paragraph>{t('cloud.unbind.text')}</Typography.Paragraph>
        <Field
          label={t('cloud.unbind.password')}
          error={errors.passwd}
          testId="cloud-unbind-password"
        >
          <Input.Password
            value={passwd}
            onChange={(e) => setPasswd(e.target.value)}
            autoComplete="current-password"
            data-testid="cloud-unbind-password"
          />
        </Field>
        {twofa && (
          <Field label={t('cloud.unbind.code')} error={errors.code} testId="cloud-unbind-code">
            <Input
              value={code}
              maxLength={TWOFA_CODE_LENGTH}
              inputMode="numeric"
              autoComplete="one-time-code"
              onChange={(e) => setCode(e.target.value.trim())}
              data-testid="cloud-unbind-code"
            />
          </Field>
        )}
        {failure && (
          <Typography.Text type="danger" data-testid="cloud-unbind-error">
            {failure}
          </Typography.Text>
        )}
      </div>
    </ConfirmDialog>
  );
}
