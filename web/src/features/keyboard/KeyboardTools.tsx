import { lazy, Suspense, useState } from 'react';
import { SnippetsOutlined } from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import { ShortcutsMenu } from './ShortcutsMenu';
import { toggleKeyboard } from './virtual-keyboard-store';
import { useKeyboardMode } from './use-keyboard-mode';
import { ToolButton } from '../../components/ToolButton';

const AddShortcutDialog = lazy(() => import('./AddShortcutDialog'));
const PasteDialog = lazy(() => import('./PasteDialog'));

/** A keyboard outline: antd's icon set has none. */
function KeyboardIcon() {
  return (
    <span role="img" aria-hidden className="anticon">
      <svg viewBox="0 0 24 24" width="1em" height="1em" fill="none" stroke="currentColor">
        <rect x="2" y="5" width="20" height="14" rx="2" strokeWidth="1.8" />
        <path
          d="M6 9h1M10 9h1M14 9h1M18 9h0.5M6 12.5h1M10 12.5h1M14 12.5h1M18 12.5h0.5M8 16h8"
          strokeWidth="1.8"
          strokeLinecap="round"
        />
      </svg>
    </span>
  );
}

/** The toolbar's keyboard group: virtual keyboard toggle, paste text, shortcuts menu. */
export function KeyboardTools() {
  const { t } = useTranslation();
  const mode = useKeyboardMode();
  const [dialog, setDialog] = useState<'paste' | 'addShortcut' | null>(null);
  const close = () => setDialog(null);

  return (
    <>
      <ToolButton
        title={t('keyboard.toggle')}
        icon={<KeyboardIcon />}
        onClick={toggleKeyboard}
        testId="toolbar-keyboard"
        active={mode !== 'closed'}
      />
      <ToolButton
        title={t('paste.title')}
        icon={<SnippetsOutlined />}
        onClick={() => setDialog('paste')}
        testId="toolbar-paste"
      />
      <ShortcutsMenu onAdd={() => setDialog('addShortcut')} />
      {dialog && (
        <Suspense fallback={null}>
          {dialog === 'paste' ? (
            <PasteDialog onClose={close} />
          ) : (
            <AddShortcutDialog onClose={close} />
          )}
        </Suspense>
      )}
    </>
  );
}
