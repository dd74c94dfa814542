import { useState } from 'react';
import { Button, Form, Input } from 'antd';
import { useTranslation } from 'react-i18next';
import { ADMIN_USER } from '@kvm/protocol/constants';
import { api, ApiError, errorMessage } from '../../lib/api';
import { confirmError, passwordError } from '../auth/password-rules';
import { useMessage } from '../../components/notify';

interface ChangePasswordValues {
  oldPassword: string;
  newPassword: string;
  confirm: string;
}

/** POST /api/init/change_password?user=admin&old_password=&new_password= (SPEC 7). */
export function ChangePasswordForm() {
  const { t } = useTranslation();
  const message = useMessage();
  const [form] = Form.useForm<ChangePasswordValues>();
  const [busy, setBusy] = useState(false);

  const onFinish = async (values: ChangePasswordValues) => {
    setBusy(true);
    try {
      await api.post('/init/change_password', {
        query: {
          user: ADMIN_USER,
          old_password: values.oldPassword,
          new_password: values.newPassword,
        },
      });
      void message.success(t('settings.security.passwordChanged'));
      form.resetFields();
    } catch (err) {
      // SPEC 8: 403 means the old password was wrong.
      void message.error(
        err instanceof ApiError && err.status === 403
          ? t('settings.security.oldPasswordWrong')
          : errorMessage(err, t('common.settingFailed')),
      );
    } finally {
      setBusy(false);
    }
  };

  return (
    <Form<ChangePasswordValues>
      form={form}
      layout="vertical"
      size="small"
      requiredMark={false}
      onFinish={(v) => void onFinish(v)}
    >
      <Form.Item
        name="oldPassword"
        label={t('settings.security.oldPassword')}
        rules={[{ required: true, message: t('settings.security.oldPasswordRequired') }]}
      >
        <Input.Password autoComplete="current-password" data-testid="change-password-old" />
      </Form.Item>
      <Form.Item
        name="newPassword"
        label={t('settings.security.newPassword')}
        rules={[
          {
            validator: (_, value: string | undefined) => {
              const error = passwordError(value ?? '');
              return error ? Promise.reject(new Error(t(error))) : Promise.resolve();
            },
          },
        ]}
      >
        <Input.Password autoComplete="new-password" data-testid="change-password-new" />
      </Form.Item>
      <Form.Item
        name="confirm"
        label={t('settings.security.confirmPassword')}
        dependencies={['newPassword']}
        rules={[
          ({ getFieldValue }) => ({
            validator: (_, value: string | undefined) => {
              const error = confirmError(String(getFieldValue('newPassword') ?? ''), value ?? '');
              return error ? Promise.reject(new Error(t(error))) : Promise.resolve();
            },
          }),
        ]}
      >
        <Input.Password autoComplete="new-password" data-testid="change-password-confirm" />
      </Form.Item>
      <Button htmlType="submit" loading={busy} data-testid="change-password-submit">
        {t('settings.security.save')}
      </Button>
    </Form>
  );
}
