import { useState, type FormEvent, type ReactNode } from 'react';
import { Alert, Button, Checkbox, Form, Input, Select, Space, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import {
  CLOUD_PASSWORD_MAX,
  CLOUD_REGIONS,
  EMAIL_CODE_DIGITS,
  validateCloudLogin,
  validateCloudSignUp,
  type CloudFieldError,
  type CloudLogin,
  type CloudSignUp,
} from '@kvm/protocol/cloud';
import { TWOFA_CODE_LENGTH } from '@kvm/protocol/constants';
import { useMessage } from '../../components/notify';
import { withDetail } from '../../lib/api';
import { twoFaCodeError } from '../auth/twofa-code';
import { asksForTotp, bindWithLogin, EMAIL_RESEND_S, sendEmailCode, signUp } from './cloud-store';
import { FIELD_ERROR_TEXT, useSecondsLeft } from './cloud-text';

type Errors = Partial<Record<string, CloudFieldError>>;

/** A form field; its wrapper carries the current message as `data-error` (tests read it). */
export function Field(props: {
  label: ReactNode;
  error: string | null | undefined;
  children: ReactNode;
  testId: string;
}) {
  return (
    <div data-testid={`${props.testId}-field`} data-error={props.error ?? ''}>
      <Form.Item
        label={props.label}
        layout="vertical"
        validateStatus={props.error ? 'error' : undefined}
        help={props.error}
        style={{ marginBottom: 8 }}
      >
        {props.children}
      </Form.Item>
    </div>
  );
}

function useFieldText() {
  const { t } = useTranslation();
  return (error: CloudFieldError | undefined) => (error ? t(FIELD_ERROR_TEXT[error]) : null);
}

/** A text or password field of the account forms, its test id `cloud-<id>`. */
function TextField(props: {
  id: string;
  label: string;
  error: string | null;
  value: string;
  onChange: (value: string) => void;
  autoComplete: string;
  password?: boolean;
  maxLength?: number;
}) {
  const Control = props.password ? Input.Password : Input;
  return (
    <Field label={props.label} error={props.error} testId={`cloud-${props.id}`}>
      <Control
        value={props.value}
        maxLength={props.maxLength}
        onChange={(e) => props.onChange(e.target.value)}
        autoComplete={props.autoComplete}
        data-testid={`cloud-${props.id}`}
      />
    </Field>
  );
}

function RegionSelect(props: { value: string; onChange: (v: string) => void }) {
  const { t } = useTranslation();
  return (
    <Select
      value={props.value || undefined}
      onChange={props.onChange}
      options={CLOUD_REGIONS.map((r) => ({ value: r, label: t(`cloud.region.${r}`) }))}
      data-testid="cloud-region"
    />
  );
}

function FormError({ text }: { text: string | null }) {
  if (!text) return null;
  return (
    <Alert
      type="error"
      showIcon
      style={{ marginTop: 8 }}
      title={<span data-testid="cloud-account-error">{text}</span>}
    />
  );
}

/**
 * SPEC 5's cloud login (password 6-10, username and region required), which binds the device
 * to that fleet account; the fleet account's 2FA code when the fleet asks for it.
 */
export function LoginForm({ onSignUp }: { onSignUp: () => void }) {
  const { t } = useTranslation();
  const message = useMessage();
  const fieldText = useFieldText();
  const [form, setForm] = useState<CloudLogin>({ username: '', password: '', region: '' });
  const [totpAsked, setTotpAsked] = useState(false);
  const [errors, setErrors] = useState<Errors>({});
  const [totpError, setTotpError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const set = (patch: Partial<CloudLogin>) => setForm((f) => ({ ...f, ...patch }));

  const submit = async (event?: FormEvent) => {
    event?.preventDefault();
    const found = validateCloudLogin(form);
    const totpInvalid = totpAsked ? twoFaCodeError(form.totp ?? '') : null;
    setErrors(found);
    setTotpError(totpInvalid ? t(totpInvalid) : null);
    if (Object.keys(found).length > 0 || totpInvalid) return;
    setBusy(true);
    setError(null);
    try {
      await bindWithLogin(totpAsked ? form : { ...form, totp: undefined });
      void message.success(t('cloud.bind.done', { account: form.username }));
    } catch (err) {
      if (asksForTotp(err) && !totpAsked) {
        setTotpAsked(true);
      } else {
        setError(withDetail(t('cloud.login.failed'), err));
      }
    } finally {
      setBusy(false);
    }
  };

  return (
    <form onSubmit={(e) => void submit(e)} noValidate data-testid="cloud-login">
      <TextField
        id="username"
        label={t('cloud.login.username')}
        error={fieldText(errors.username)}
        value={form.username}
        onChange={(username) => set({ username })}
        autoComplete="username"
      />
      <TextField
        id="password"
        label={t('cloud.login.password')}
        error={fieldText(errors.password)}
        value={form.password}
        onChange={(password) => set({ password })}
        autoComplete="current-password"
        password
        maxLength={CLOUD_PASSWORD_MAX}
      />
      <Field label={t('cloud.region.label')} error={fieldText(errors.region)} testId="cloud-region">
        <RegionSelect value={form.region} onChange={(region) => set({ region })} />
      </Field>
      {totpAsked && (
        <Field label={t('cloud.login.totp')} error={totpError} testId="cloud-totp">
          <Typography.Paragraph type="secondary" style={{ marginBottom: 4 }}>
            {t('cloud.login.totpAsked')}
          </Typography.Paragraph>
          <Input
            value={form.totp ?? ''}
            maxLength={TWOFA_CODE_LENGTH}
            inputMode="numeric"
            autoComplete="one-time-code"
            onChange={(e) => set({ totp: e.target.value.trim() })}
            data-testid="cloud-totp"
          />
        </Field>
      )}
      <Button type="primary" htmlType="submit" loading={busy} data-testid="cloud-login-submit">
        {t('cloud.login.submit')}
      </Button>
      <FormError text={error} />
      <Typography.Paragraph style={{ marginTop: 12 }}>
        {t('cloud.login.noAccount')}{' '}
        <Typography.Link onClick={onSignUp} data-testid="cloud-to-signup">
          {t('cloud.login.toSignUp')}
        </Typography.Link>
      </Typography.Paragraph>
    </form>
  );
}

const EMPTY_SIGNUP: CloudSignUp = {
  username: '',
  email: '',
  email_code: '',
  password: '',
  password2: '',
  privacy: false,
  region: '',
};

/**
 * SPEC 5's cloud sign-up: username (5-15, letters, digits, `_ . -`, beginning with a letter or
 * digit), e-mail (format checked), the 6-digit e-mail code (sent by the fleet, resent after a
 * cooldown), the privacy policy accepted, the password twice (6-10), the region. The new
 * account then binds the device.
 */
export function SignUpForm({ onLogin }: { onLogin: () => void }) {
  const { t } = useTranslation();
  const message = useMessage();
  const fieldText = useFieldText();
  const [form, setForm] = useState<CloudSignUp>(EMPTY_SIGNUP);
  const [errors, setErrors] = useState<Errors>({});
  const [busy, setBusy] = useState<'send' | 'submit' | null>(null);
  const [resendAt, setResendAt] = useState<number | null>(null);
  const resendIn = useSecondsLeft(resendAt);
  const [error, setError] = useState<string | null>(null);
  const set = (patch: Partial<CloudSignUp>) => setForm((f) => ({ ...f, ...patch }));

  const send = async () => {
    const emailError = validateCloudSignUp({ email: form.email }).email;
    setErrors((e) => ({ ...e, email: emailError }));
    if (emailError) return;
    setBusy('send');
    setError(null);
    try {
      await sendEmailCode(form.email);
      setResendAt(Date.now() + EMAIL_RESEND_S * 1000);
      void message.success(t('cloud.signup.codeSent', { email: form.email.trim() }));
    } catch (err) {
      setError(withDetail(t('cloud.signup.sendFailed'), err));
    } finally {
      setBusy(null);
    }
  };

  const submit = async (event?: FormEvent) => {
    event?.preventDefault();
    const found = validateCloudSignUp({ ...form, email: form.email.trim() });
    setErrors(found);
    if (Object.keys(found).length > 0) return;
    setBusy('submit');
    setError(null);
    try {
      await signUp({ ...form, email: form.email.trim() });
      void message.success(t('cloud.bind.done', { account: form.username }));
    } catch (err) {
      setError(withDetail(t('cloud.signup.failed'), err));
    } finally {
      setBusy(null);
    }
  };

  return (
    <form onSubmit={(e) => void submit(e)} noValidate data-testid="cloud-signup">
      <TextField
        id="username"
        label={t('cloud.login.username')}
        error={fieldText(errors.username)}
        value={form.username}
        onChange={(username) => set({ username })}
        autoComplete="username"
        maxLength={15}
      />
      <Field label={t('cloud.signup.email')} error={fieldText(errors.email)} testId="cloud-email">
        <Input
          value={form.email}
          type="email"
          onChange={(e) => set({ email: e.target.value })}
          autoComplete="email"
          data-testid="cloud-email"
        />
      </Field>
      <Field
        label={t('cloud.signup.emailCode')}
        error={fieldText(errors.email_code)}
        testId="cloud-email-code"
      >
        <Space.Compact style={{ width: '100%' }}>
          <Input
            value={form.email_code}
            maxLength={EMAIL_CODE_DIGITS}
            inputMode="numeric"
            onChange={(e) => set({ email_code: e.target.value.trim() })}
            data-testid="cloud-email-code"
          />
          <Button
            onClick={() => void send()}
            loading={busy === 'send'}
            disabled={resendIn > 0}
            data-testid="cloud-email-send"
          >
            {resendIn > 0
              ? t('cloud.signup.resendIn', { seconds: resendIn })
              : t('cloud.signup.sendCode')}
          </Button>
        </Space.Compact>
      </Field>
      <TextField
        id="password"
        label={t('cloud.login.password')}
        error={fieldText(errors.password)}
        value={form.password}
        onChange={(password) => set({ password })}
        autoComplete="new-password"
        password
        maxLength={CLOUD_PASSWORD_MAX}
      />
      <TextField
        id="password2"
        label={t('cloud.signup.password2')}
        error={fieldText(errors.password2)}
        value={form.password2}
        onChange={(password2) => set({ password2 })}
        autoComplete="new-password"
        password
        maxLength={CLOUD_PASSWORD_MAX}
      />
      <Field label={t('cloud.region.label')} error={fieldText(errors.region)} testId="cloud-region">
        <RegionSelect value={form.region} onChange={(region) => set({ region })} />
      </Field>
      <Field label={null} error={fieldText(errors.privacy)} testId="cloud-privacy">
        <Checkbox
          checked={form.privacy}
          onChange={(e) => set({ privacy: e.target.checked })}
          data-testid="cloud-privacy"
        >
          {t('cloud.signup.privacy')}
        </Checkbox>
      </Field>
      <Button
        type="primary"
        htmlType="submit"
        loading={busy === 'submit'}
        data-testid="cloud-signup-submit"
      >
        {t('cloud.signup.submit')}
      </Button>
      <FormError text={error} />
      <Typography.Paragraph style={{ marginTop: 12 }}>
        {t('cloud.signup.haveAccount')}{' '}
        <Typography.Link onClick={onLogin} data-testid="cloud-to-login">
          {t('cloud.signup.toLogin')}
        </Typography.Link>
      </Typography.Paragraph>
    </form>
  );
}
