import { useState, type ReactNode } from 'react';
import { InputNumber, Radio, Space, Switch, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import { MOUSE_MODES, SCROLL_MODES, type MouseMode, type ScrollMode } from '@kvm/protocol/enums';
import { MOUSE_OUTPUT_ABSOLUTE, MOUSE_OUTPUT_RELATIVE } from '@kvm/protocol/hid/state';
import { parseFiniteNumber } from '@kvm/protocol/validation';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { useMessage } from '../../components/notify';
import type { I18nKey } from '../../i18n/keys';
import { api, errorMessage } from '../../lib/api';
import { writeStorage } from '../../lib/storage';
import { useHid } from '../input/input-session';
import { saveConfig, useConfig } from '../config/config-store';
import { SettingsField as Field, SettingsGroup } from './SettingsGroup';
import { useSaveConfig } from './use-save-config';

const MODE_TEXT: Record<MouseMode, I18nKey> = {
  absolute: 'settings.mouse.absolute',
  relative: 'settings.mouse.relative',
};

const MODE_OUTPUT: Record<MouseMode, string> = {
  absolute: MOUSE_OUTPUT_ABSOLUTE,
  relative: MOUSE_OUTPUT_RELATIVE,
};

const SCROLL_TEXT: Record<ScrollMode, I18nKey> = {
  STANDARD: 'settings.mouse.scrollStandard',
  VERTICAL: 'settings.mouse.scrollVertical',
  HORIZONTAL: 'settings.mouse.scrollHorizontal',
  BOTH: 'settings.mouse.scrollBoth',
};

/**
 * A whole number in a range (SPEC 3/5 bounds, checked again by the shared schema on save). The
 * typed text stays in the field until Enter, blur or a step button commits it.
 */
function NumberSetting(props: {
  testId: string;
  value: number;
  min: number;
  max: number;
  onCommit: (value: number) => void;
  suffix?: ReactNode;
}) {
  const { value, min, max, onCommit } = props;
  const [draft, setDraft] = useState<number | null>(null);
  const commit = (next: number | null) => {
    setDraft(null);
    if (next === null || !Number.isFinite(next)) return;
    const clamped = Math.min(max, Math.max(min, Math.round(next)));
    if (clamped !== value) onCommit(clamped);
  };
  // The text in the field, not the last onChange: out-of-range text never reaches onChange.
  // SPEC 5's numeric check: a finite decimal, or nothing is committed.
  const commitText = (text: string) => commit(parseFiniteNumber(text));
  return (
    <Space>
      <InputNumber<number>
        data-testid={props.testId}
        min={min}
        max={max}
        precision={0}
        value={draft ?? value}
        onChange={(next) => setDraft(next)}
        onBlur={(e) => commitText(e.target.value)}
        onPressEnter={(e) => commitText((e.target as HTMLInputElement).value)}
        onStep={(next) => commit(next)}
      />
      {props.suffix}
    </Space>
  );
}

/**
 * SPEC 2 settings: mouse. The mode switch re-creates the device's mouse (SPEC 4: "needs a
 * reboot" of the USB function, not of the device) after a confirmation; the jiggler is applied
 * on the device and remembered in the config.
 */
export function MouseGroup() {
  const { t } = useTranslation();
  const message = useMessage();
  const save = useSaveConfig();
  const config = useConfig((s) => s.config);
  const hidAbsolute = useHid((s) => s.state?.mouse?.absolute);
  const busy = useHid((s) => s.state?.busy ?? false);
  const outputs = useHid((s) => s.state?.mouse?.outputs?.available);
  const [pendingMode, setPendingMode] = useState<MouseMode | null>(null);
  const [jiggleBusy, setJiggleBusy] = useState(false);

  const absolute = hidAbsolute ?? config?.is_absolute_mouse ?? true;
  const mode: MouseMode = absolute ? 'absolute' : 'relative';
  const mouseControl = config?.mouse_control ?? true;
  const showCursor = config?.show_cursor ?? true;
  const polling = config?.mouse_polling ?? 10;
  const sense = config?.relative_sense ?? 10;
  const scrollRate = config?.scroll_rate ?? 5;
  const reverse = config?.reverse_scrolling ?? 'STANDARD';
  const jiggle = config?.mouse_jiggle ?? false;

  const changeMode = async (next: MouseMode) => {
    try {
      await api.post('/hid/set_params', { query: { mouse_output: MODE_OUTPUT[next] } });
      await saveConfig({ is_absolute_mouse: next === 'absolute' });
      void message.success(t('settings.mouse.modeChanged'));
    } catch (err) {
      void message.error(errorMessage(err, t('common.settingFailed')));
    } finally {
      setPendingMode(null);
    }
  };

  const changeJiggle = async (next: boolean) => {
    setJiggleBusy(true);
    try {
      await api.post('/hid/set_params', { query: { jiggler: String(next) } });
      await saveConfig({ mouse_jiggle: next });
    } catch (err) {
      void message.error(errorMessage(err, t('common.settingFailed')));
    } finally {
      setJiggleBusy(false);
    }
  };

  const saveNumber = (storageKey: string, patch: Parameters<typeof save>[0], value: number) => {
    writeStorage(storageKey, String(value));
    save(patch);
  };

  return (
    <SettingsGroup title={t('settings.mouse.title')} testId="settings-group-mouse">
      <Field label={t('settings.mouse.mode')}>
        <Radio.Group
          data-testid="settings-mouse-mode"
          data-value={mode}
          value={mode}
          disabled={busy}
          onChange={(e) => setPendingMode(e.target.value as MouseMode)}
        >
          {MOUSE_MODES.map((m) => (
            <Radio
              key={m}
              value={m}
              data-testid={`settings-mouse-mode-${m}`}
              disabled={!!outputs && outputs.length > 0 && !outputs.includes(MODE_OUTPUT[m])}
            >
              {t(MODE_TEXT[m])}
            </Radio>
          ))}
        </Radio.Group>
        {busy && (
          <Typography.Text
            type="secondary"
            data-testid="settings-mouse-busy"
            style={{ display: 'block' }}
          >
            {t('settings.mouse.busy')}
          </Typography.Text>
        )}
        {mode === 'relative' && (
          <Typography.Text type="secondary" style={{ display: 'block', fontSize: 12 }}>
            {t('settings.mouse.relativeHint')}
          </Typography.Text>
        )}
      </Field>
      <Field label={t('settings.mouse.control')}>
        <Switch
          data-testid="settings-mouse-control"
          checked={mouseControl}
          onChange={(checked) => save({ mouse_control: checked })}
        />
      </Field>
      <Field label={t('settings.mouse.showCursor')}>
        <Switch
          data-testid="settings-show-cursor"
          checked={showCursor}
          onChange={(checked) => save({ show_cursor: checked })}
        />
      </Field>
      <Field label={t('settings.mouse.polling')}>
        <NumberSetting
          testId="settings-mouse-polling"
          value={polling}
          min={10}
          max={100}
          onCommit={(v) => saveNumber(STORAGE_KEYS.mousePollingInterval, { mouse_polling: v }, v)}
        />
      </Field>
      <Field label={t('settings.mouse.relativeSense')}>
        <NumberSetting
          testId="settings-relative-sense"
          value={sense}
          min={1}
          max={100}
          onCommit={(v) => saveNumber(STORAGE_KEYS.relativeSens, { relative_sense: v }, v)}
          suffix={
            <Typography.Text type="secondary">{`×${(sense / 10).toFixed(1)}`}</Typography.Text>
          }
        />
      </Field>
      <Field label={t('settings.mouse.scrollRate')}>
        <NumberSetting
          testId="settings-scroll-rate"
          value={scrollRate}
          min={1}
          max={127}
          onCommit={(v) => saveNumber(STORAGE_KEYS.scrollRate, { scroll_rate: v }, v)}
        />
      </Field>
      <Field label={t('settings.mouse.reverseScrolling')}>
        <Radio.Group
          data-testid="settings-reverse-scrolling"
          data-value={reverse}
          value={reverse}
          onChange={(e) => {
            const next = e.target.value as ScrollMode;
            writeStorage(STORAGE_KEYS.reverseScrolling, next);
            save({ reverse_scrolling: next });
          }}
        >
          {SCROLL_MODES.map((m) => (
            <Radio key={m} value={m} data-testid={`settings-reverse-scrolling-${m}`}>
              {t(SCROLL_TEXT[m])}
            </Radio>
          ))}
        </Radio.Group>
      </Field>
      <Field label={t('settings.mouse.jiggle')}>
        <Switch
          data-testid="settings-mouse-jiggle"
          checked={jiggle}
          loading={jiggleBusy}
          onChange={(checked) => void changeJiggle(checked)}
        />
        <Typography.Text type="secondary" style={{ display: 'block', fontSize: 12 }}>
          {t('settings.mouse.jiggleHint')}
        </Typography.Text>
      </Field>
      {pendingMode !== null && (
        <ConfirmDialog
          open
          onConfirm={() => changeMode(pendingMode)}
          onCancel={() => setPendingMode(null)}
        >
          <span data-testid="settings-mouse-mode-confirm">{t('settings.mouse.modeConfirm')}</span>
        </ConfirmDialog>
      )}
    </SettingsGroup>
  );
}
