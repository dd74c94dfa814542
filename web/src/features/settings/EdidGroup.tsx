import { useEffect, useState } from 'react';
import { Alert, Button, Input, Select, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { useStore } from 'zustand';
import type { TFunction } from 'i18next';
import type { EdidPreset } from '@kvm/protocol/system';
import { useMessage } from '../../components/notify';
import { errorMessage } from '../../lib/api';
import { createEdidStore, EdidFormatError } from '../system/edid-store';
import { followEdidGop } from '../video/quality';
import { SettingsField as Field, SettingsGroup } from './SettingsGroup';

const CUSTOM = 'custom';
/** 512 hex characters plus generous whitespace: a bound on what the textarea holds. */
const CUSTOM_MAX_CHARS = 2048;

/** Our presets' keys (protocol/edid/presets.ts): `E<width>x<height>`, `_OV` the other vendor. */
const PRESET_KEY = /^E(\d+)x(\d+)(_OV)?$/;

/**
 * A preset's name in this console's language, from its stable key (issue 21 item 17: the
 * server's label is English); a key of another form (another device's list) keeps its label.
 */
export function presetLabel(preset: EdidPreset, t: TFunction): string {
  const m = PRESET_KEY.exec(preset.key);
  if (!m) return preset.label;
  return t('settings.edid.presetLabel', {
    width: m[1],
    height: m[2],
    hz: preset.hz,
    display: t(m[3] ? 'settings.edid.displayOther' : 'settings.edid.displayOurs'),
  });
}

/** SPEC 2/3 settings: display identity (EDID presets or custom hex, SPEC 5's check). */
export default function EdidGroup() {
  const { t } = useTranslation();
  const message = useMessage();
  const [store] = useState(createEdidStore);
  const state = useStore(store);
  const [choice, setChoice] = useState<string | undefined>();
  const [custom, setCustom] = useState<string | null>(null);
  const [invalid, setInvalid] = useState(false);
  useEffect(() => {
    void store.load();
    return () => store.dispose();
  }, [store]);

  const edid = state.edid;
  // Nothing written yet (a fresh device): the box shows the default preset, which Apply writes,
  // and a line says the display keeps its own identity until then.
  const nothingSaved = edid !== null && !edid.edid;
  const defaultPreset = state.presets.find((p) => p.is_default)?.key;
  const current = edid ? (edid.preset ?? (edid.edid ? CUSTOM : defaultPreset)) : undefined;
  const selected = choice ?? current;
  const noDisplay = edid?.applies === 'none';

  const apply = () => {
    const preset = state.presets.find((p) => p.key === selected);
    const hex = selected === CUSTOM ? (custom ?? edid?.edid ?? '') : (preset?.content ?? '');
    setInvalid(false);
    store.apply(hex).then(
      (state) => {
        setChoice(undefined);
        setCustom(null);
        void message.success(t('settings.edid.applied'));
        // SPEC 3: the gop is halved while the 4K EDID is active.
        followEdidGop(state.preferred).catch(() => undefined);
      },
      (err: unknown) => {
        if (err instanceof EdidFormatError) setInvalid(true);
        // SPEC 8 'EDID invalid': the server's own message when it refuses.
        else void message.error(errorMessage(err, t('settings.edid.invalid')));
      },
    );
  };

  return (
    <SettingsGroup title={t('settings.edid.title')} testId="settings-group-edid">
      {state.loadFailed && !edid && (
        <Typography.Text type="danger">{t('settings.system.loadFailed')}</Typography.Text>
      )}
      {noDisplay && (
        <Typography.Paragraph type="secondary" data-testid="edid-no-display">
          {t('settings.edid.noDisplay')}
        </Typography.Paragraph>
      )}
      {edid?.preferred && (
        <Typography.Paragraph data-testid="edid-in-force">
          {t('settings.edid.inForce', {
            mode: `${edid.preferred.width}x${edid.preferred.height} ${edid.preferred.hz} Hz`,
          })}
        </Typography.Paragraph>
      )}
      {edid?.source === 'device' && (
        <Typography.Paragraph data-testid="edid-held" data-preset={edid.preset ?? ''}>
          {edid.edid
            ? t('settings.edid.held', {
                edid: (() => {
                  const p = state.presets.find((x) => x.key === edid.preset);
                  return p ? presetLabel(p, t) : t('settings.edid.heldCustom');
                })(),
              })
            : t('settings.edid.heldNone')}
        </Typography.Paragraph>
      )}
      {edid?.pending && edid.applies === 'power_cycle' && (
        <Alert
          type="info"
          showIcon
          data-testid="edid-power-cycle"
          style={{ marginBottom: 12 }}
          message={t('settings.edid.powerCycle')}
        />
      )}
      <Field label={t('settings.edid.preset')}>
        <div data-testid="edid-preset-field" data-value={selected ?? ''}>
          <Select<string>
            data-testid="edid-preset"
            style={{ width: '100%' }}
            value={selected}
            disabled={!edid || noDisplay || state.busy}
            options={[
              ...state.presets.map((p) => ({ value: p.key, label: presetLabel(p, t) })),
              { value: CUSTOM, label: t('settings.edid.custom') },
            ]}
            onChange={(value) => {
              setChoice(value);
              setInvalid(false);
            }}
          />
        </div>
      </Field>
      {nothingSaved && !noDisplay && (
        <Typography.Paragraph
          type="secondary"
          data-testid="edid-none-saved"
          style={{ fontSize: 12 }}
        >
          {t('settings.edid.noneSaved')}
        </Typography.Paragraph>
      )}
      {selected === CUSTOM && (
        <Field label={t('settings.edid.customHex')}>
          <Input.TextArea
            data-testid="edid-custom"
            rows={5}
            maxLength={CUSTOM_MAX_CHARS}
            spellCheck={false}
            style={{ fontFamily: 'monospace', fontSize: 11 }}
            value={custom ?? edid?.edid ?? ''}
            status={invalid ? 'error' : undefined}
            onChange={(e) => {
              setCustom(e.target.value);
              setInvalid(false);
            }}
          />
        </Field>
      )}
      {invalid && (
        <Typography.Paragraph type="danger" data-testid="edid-error">
          {t('settings.edid.invalid')}
        </Typography.Paragraph>
      )}
      <Button
        type="primary"
        size="small"
        data-testid="edid-apply"
        disabled={!edid || noDisplay || selected === undefined}
        loading={state.busy}
        onClick={apply}
      >
        {t('settings.edid.apply')}
      </Button>
    </SettingsGroup>
  );
}
