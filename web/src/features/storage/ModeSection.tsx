import { Radio, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { MSD_MODES, type MsdMode } from '@kvm/protocol/enums';
import { MODE_TEXT } from './mode-text';
import { Section } from './Section';

/** File sharing (read-write USB drive) or image mounting (CD-ROM); locked while mounted. */
export function ModeSection(props: {
  mode: MsdMode;
  connected: boolean;
  onChange: (mode: MsdMode) => void;
}) {
  const { t } = useTranslation();
  const { mode, connected } = props;
  return (
    <Section title={t('storage.mode')}>
      <Radio.Group
        value={mode}
        disabled={connected}
        onChange={(e) => props.onChange(e.target.value as MsdMode)}
        optionType="button"
        buttonStyle="solid"
        data-testid="msd-mode"
        data-value={mode}
      >
        {MSD_MODES.map((m) => (
          <Radio.Button key={m} value={m} data-testid={`msd-mode-${m}`}>
            {t(MODE_TEXT[m].label)}
          </Radio.Button>
        ))}
      </Radio.Group>
      <Typography.Paragraph type="secondary" style={{ margin: '4px 0 0', fontSize: 12 }}>
        {t(connected ? 'storage.modeLocked' : MODE_TEXT[mode].hint)}
      </Typography.Paragraph>
    </Section>
  );
}
