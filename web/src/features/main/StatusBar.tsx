import { theme } from 'antd';
import { useTranslation } from 'react-i18next';
import type { I18nKey } from '../../i18n/keys';

interface StatusItem {
  id: 'stream' | 'mouse' | 'keyboard' | 'volume' | 'microphone' | 'camera';
  label: I18nKey;
  value: I18nKey;
}

/**
 * SPEC 2 status bar. The stream, HID, audio and camera subsystems arrive with later issues;
 * until they report, each slot says what is known: no stream runs, the rest is unknown.
 */
const ITEMS: readonly StatusItem[] = [
  { id: 'stream', label: 'status.stream', value: 'status.inactive' },
  { id: 'mouse', label: 'status.mouse', value: 'status.unknown' },
  { id: 'keyboard', label: 'status.keyboard', value: 'status.unknown' },
  { id: 'volume', label: 'status.volume', value: 'status.unknown' },
  { id: 'microphone', label: 'status.microphone', value: 'status.unknown' },
  { id: 'camera', label: 'status.camera', value: 'status.unknown' },
];

export function StatusBar() {
  const { t } = useTranslation();
  const { token } = theme.useToken();
  return (
    <footer
      data-testid="status-bar"
      style={{
        display: 'flex',
        flexWrap: 'wrap',
        gap: 16,
        alignItems: 'center',
        minHeight: 28,
        padding: '2px 12px',
        fontSize: token.fontSizeSM,
        color: token.colorTextSecondary,
        background: token.colorBgContainer,
        borderTop: `1px solid ${token.colorBorderSecondary}`,
        flex: 'none',
      }}
    >
      {ITEMS.map((item) => (
        <span key={item.id} data-testid={`status-${item.id}`}>
          {t(item.label)}: {t(item.value)}
        </span>
      ))}
    </footer>
  );
}
