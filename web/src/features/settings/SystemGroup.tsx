import { useEffect, useState } from 'react';
import { Button, Input, Select, Tag, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { useStore } from 'zustand';
import {
  CUSTOM_IDENTITY_PRESET,
  DEFAULT_IDENTITY_PRESET,
  DEVICE_IDENTITY_PRESETS,
  USB_STRING_MAX,
  validateUsbIdentity,
  type UsbIdentityError,
} from '@kvm/protocol/identity';
import type { SystemParams, UsbIdentityField } from '@kvm/protocol/system';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { useMessage } from '../../components/notify';
import type { I18nKey } from '../../i18n/keys';
import { errorMessage } from '../../lib/api';
import { assignPath } from '../../lib/base';
import { createIdentityStore } from '../system/identity-store';
import { rebootDevice, type UsbIdentity } from '../system/system-api';
import { resetToDefaults, waitForFirstRun } from '../system/reset-api';
import { SettingsField as Field, SettingsGroup } from './SettingsGroup';

/** The device identity presets' names in the console's language, by key (others: their label). */
const IDENTITY_PRESET_TEXT: Readonly<Record<string, I18nKey>> = {
  [DEFAULT_IDENTITY_PRESET]: 'settings.system.presetDefault',
  monitor_1080p_receiver: 'settings.system.presetNames.monitor_1080p_receiver',
  monitor_2k_cherry: 'settings.system.presetNames.monitor_2k_cherry',
  monitor_4k_holtek: 'settings.system.presetNames.monitor_4k_holtek',
};

/** The USB identity form's fields: wire name, test id, label. */
const USB_FIELDS: readonly [UsbIdentityField, string, I18nKey][] = [
  ['otg_manufacturer', 'usb-manufacturer', 'settings.system.manufacturer'],
  ['otg_product', 'usb-product', 'settings.system.product'],
  ['otg_vendor_id', 'usb-vendor-id', 'settings.system.vendorId'],
  ['otg_product_id', 'usb-product-id', 'settings.system.productId'],
  ['otg_serial', 'usb-serial', 'settings.system.serial'],
];

function identityOf(params: SystemParams): UsbIdentity {
  const { otg_manufacturer, otg_product, otg_vendor_id, otg_product_id, otg_serial } = params;
  return { otg_manufacturer, otg_product, otg_vendor_id, otg_product_id, otg_serial };
}

/** SPEC 5 messages by the shared rule's code. */
function useUsbErrorText() {
  const { t } = useTranslation();
  return (error: UsbIdentityError): string => {
    const entry = USB_FIELDS.find(([name]) => name === error.field);
    const field = entry ? t(entry[2]) : error.field;
    if (error.code === 'required') return t('settings.system.required', { field });
    if (error.code === 'invalid_hex') {
      return error.field === 'otg_vendor_id'
        ? t('settings.system.vendorIdInvalid')
        : t('settings.system.productIdInvalid');
    }
    if (error.code === 'too_long') return t('settings.system.tooLong', { field });
    if (error.field === 'otg_serial') return t('settings.system.serialInvalid');
    return t('settings.system.textInvalid', { field });
  };
}

/** SPEC 2 settings: system (device identity presets, USB identity). Reboot comes with issue 12. */
export default function SystemGroup() {
  const { t } = useTranslation();
  const message = useMessage();
  const errorText = useUsbErrorText();
  const [store] = useState(createIdentityStore);
  const state = useStore(store);
  const [form, setForm] = useState<UsbIdentity | null>(null);
  const [error, setError] = useState<UsbIdentityError | null>(null);
  useEffect(() => {
    void store.load();
    return () => store.dispose();
  }, [store]);

  const params = state.params;
  const fail = (err: unknown) => void message.error(errorMessage(err, t('common.settingFailed')));
  const values = form ?? (params ? identityOf(params) : null);
  const applies = new Set(params?.usb_applies ?? []);
  const hardwareOnly = USB_FIELDS.filter(([name]) => !applies.has(name));

  const choosePreset = (key: string) => {
    if (key === CUSTOM_IDENTITY_PRESET) return; // the form below is the custom identity
    store.applyPreset(key).then(() => {
      setForm(null);
      setError(null);
      void message.success(t('settings.system.presetApplied'));
    }, fail);
  };

  const applyUsb = () => {
    if (!values) return;
    const problem = validateUsbIdentity(values);
    setError(problem);
    if (problem) return;
    store.applyUsb(values).then(() => {
      setForm(null);
      void message.success(t('settings.system.usbApplied'));
    }, fail);
  };

  return (
    <SettingsGroup title={t('settings.system.title')} testId="settings-group-system">
      {state.loadFailed && !params && (
        <Typography.Text type="danger">{t('settings.system.loadFailed')}</Typography.Text>
      )}
      <Field label={t('settings.system.identityPreset')}>
        <div data-testid="identity-preset-field" data-value={params?.identity_preset ?? ''}>
          <Select<string>
            data-testid="identity-preset"
            style={{ width: '100%' }}
            value={params?.identity_preset}
            disabled={!params || state.busy}
            options={[
              ...DEVICE_IDENTITY_PRESETS.map((p) => {
                const text = IDENTITY_PRESET_TEXT[p.key];
                return { value: p.key, label: text ? t(text) : p.label };
              }),
              { value: CUSTOM_IDENTITY_PRESET, label: t('settings.system.presetCustom') },
            ]}
            onChange={choosePreset}
          />
        </div>
      </Field>
      {values && (
        <Field label={t('settings.system.usbTitle')}>
          {hardwareOnly.length > 0 && (
            // Said once for the group (issue 21 item 17), not under every field.
            <Tag
              data-testid="usb-hardware-only"
              data-fields={hardwareOnly.map(([name]) => name).join(',')}
              style={{ fontSize: 11, marginBottom: 6, whiteSpace: 'normal' }}
            >
              {hardwareOnly.length === USB_FIELDS.length
                ? t('settings.system.hardwareOnly')
                : t('settings.system.hardwareOnlyFields', {
                    fields: hardwareOnly.map(([, , label]) => t(label)).join(', '),
                  })}
            </Tag>
          )}
          {USB_FIELDS.map(([name, testId, label]) => (
            <div key={name} style={{ marginBottom: 6 }}>
              <Typography.Text type="secondary">{t(label)}</Typography.Text>
              <Input
                size="small"
                data-testid={testId}
                value={values[name]}
                maxLength={USB_STRING_MAX}
                disabled={state.busy}
                status={error?.field === name ? 'error' : undefined}
                onChange={(e) => {
                  setForm({ ...values, [name]: e.target.value });
                  setError(null);
                }}
              />
              {error?.field === name && (
                <Typography.Text type="danger" data-testid={`${testId}-error`}>
                  {errorText(error)}
                </Typography.Text>
              )}
            </div>
          ))}
          <Typography.Paragraph type="secondary" style={{ fontSize: 12, margin: '4px 0 8px' }}>
            {t('settings.system.serialAny')}
          </Typography.Paragraph>
          <Button
            type="primary"
            size="small"
            data-testid="usb-apply"
            disabled={form === null}
            loading={state.busy}
            onClick={applyUsb}
          >
            {t('settings.system.apply')}
          </Button>
        </Field>
      )}
      <RebootControl />
      <ResetControl />
    </SettingsGroup>
  );
}

/** Reboot the device, after SPEC 2's confirm dialog; 'reboot failed' (SPEC 8) if refused. */
function RebootControl() {
  const { t } = useTranslation();
  const message = useMessage();
  const [open, setOpen] = useState(false);
  return (
    <Field label={t('settings.system.rebootTitle')}>
      <Button danger size="small" data-testid="system-reboot" onClick={() => setOpen(true)}>
        {t('settings.system.reboot')}
      </Button>
      <ConfirmDialog
        open={open}
        okText={t('settings.system.reboot')}
        onCancel={() => setOpen(false)}
        onConfirm={async () => {
          try {
            await rebootDevice();
          } catch (err) {
            void message.error(errorMessage(err, t('settings.system.rebootFailed')));
            throw err;
          }
          setOpen(false);
          void message.success(t('settings.system.rebooting'));
        }}
      >
        {t('settings.system.rebootConfirm')}
      </ConfirmDialog>
    </Field>
  );
}

/**
 * Reset to defaults (issue 12), after the confirm dialog saying what is lost. The device wipes
 * its data at the restart; once it answers again, not initialised, the console opens /init.
 */
function ResetControl() {
  const { t } = useTranslation();
  const message = useMessage();
  const [open, setOpen] = useState(false);
  return (
    <Field label={t('settings.system.resetTitle')}>
      <Button danger size="small" data-testid="system-reset" onClick={() => setOpen(true)}>
        {t('settings.system.reset')}
      </Button>
      <ConfirmDialog
        open={open}
        okText={t('settings.system.reset')}
        onCancel={() => setOpen(false)}
        onConfirm={async () => {
          try {
            await resetToDefaults();
          } catch (err) {
            void message.error(errorMessage(err, t('settings.system.resetFailed')));
            throw err;
          }
          setOpen(false);
          void message.success(t('settings.system.resetting'));
          // A full load once the device is back: every store starts over at first-run setup.
          void waitForFirstRun({
            go: (path) => assignPath(`${path}${window.location.search}`),
          });
        }}
      >
        {t('settings.system.resetConfirm')}
      </ConfirmDialog>
    </Field>
  );
}
