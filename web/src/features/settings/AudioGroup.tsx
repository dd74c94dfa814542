import { Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { CameraStatus, MicControl, VolumeControl } from '../audio/AudioControls';
import { useAudio } from '../audio/audio-store';
import { SettingsField as Field, SettingsGroup } from './SettingsGroup';

/**
 * SPEC 2 settings: audio (issue 14). The same controls as the status bar (their ids prefixed
 * `settings-`): the remote computer's sound, the microphone (enable flow, on/off, meter), the
 * camera's state.
 */
export function AudioGroup() {
  const { t } = useTranslation();
  const simulated = useAudio((s) => s.device?.simulated === true);
  return (
    <SettingsGroup title={t('audio.settings.title')} testId="settings-group-audio">
      <Field label={t('audio.settings.sound')}>
        <VolumeControl testIdPrefix="settings-" />
        {simulated && (
          <Typography.Paragraph type="secondary" style={{ margin: '4px 0 0' }}>
            {t('audio.simulatedTip')}
          </Typography.Paragraph>
        )}
      </Field>
      <Field label={t('audio.settings.microphone')}>
        <MicControl testIdPrefix="settings-" />
        <Typography.Paragraph type="secondary" style={{ margin: '4px 0 0' }}>
          {t('audio.settings.micNote')}
        </Typography.Paragraph>
      </Field>
      <Field label={t('audio.settings.camera')}>
        <CameraStatus testIdPrefix="settings-" />
      </Field>
    </SettingsGroup>
  );
}
