import { lazy, Suspense, useState } from 'react';
import { Button, Flex, Typography } from 'antd';
import { PlusOutlined } from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import { displayLabel, shortcutLabel } from '../keyboard/shortcuts';
import { DeleteShortcutButton } from '../keyboard/ShortcutsMenu';
import { sendShortcut, useShortcutList } from '../keyboard/use-shortcut-list';

const AddShortcutDialog = lazy(() => import('../keyboard/AddShortcutDialog'));

/**
 * GL's toolbox shortcuts: the toolbar menu's list (useShortcutList: the built-ins, then the
 * user's own), one click sends the keys; the user's own can be deleted, and "Add shortcut" opens
 * the toolbar's add dialog.
 */
export function ShortcutsGroup() {
  const { t } = useTranslation();
  const { builtin, saved, remove } = useShortcutList();
  const [adding, setAdding] = useState(false);

  return (
    <>
      <Typography.Text type="secondary">{t('shortcuts.builtin')}</Typography.Text>
      <Flex wrap gap={8} style={{ margin: '4px 0 12px' }}>
        {builtin.map((s, i) => (
          <Button
            key={s.keys.join('+')}
            size="small"
            title={shortcutLabel(s.keys)}
            onClick={() => sendShortcut(s.keys)}
            data-testid={`toolbox-shortcut-builtin-${i}`}
          >
            {displayLabel(s)}
          </Button>
        ))}
      </Flex>
      <Typography.Text type="secondary">{t('shortcuts.saved')}</Typography.Text>
      <Flex vertical gap={4} style={{ margin: '4px 0 12px' }}>
        {saved.length === 0 && (
          <Typography.Text type="secondary" data-testid="toolbox-shortcuts-none">
            {t('shortcuts.none')}
          </Typography.Text>
        )}
        {saved.map((s, i) => (
          <Flex key={`${i}-${s.keys.join('+')}`} gap={4} align="center">
            <Button
              size="small"
              style={{ flex: 1, minWidth: 0, justifyContent: 'flex-start' }}
              title={shortcutLabel(s.keys)}
              onClick={() => sendShortcut(s.keys)}
              data-testid={`toolbox-shortcut-saved-${i}`}
            >
              <span style={{ overflow: 'hidden', textOverflow: 'ellipsis' }}>
                {displayLabel(s)}
              </span>
            </Button>
            <DeleteShortcutButton
              testId={`toolbox-shortcut-delete-${i}`}
              onDelete={() => void remove(i)}
            />
          </Flex>
        ))}
      </Flex>
      <Button
        icon={<PlusOutlined />}
        onClick={() => setAdding(true)}
        data-testid="toolbox-shortcut-add"
      >
        {t('shortcuts.add')}
      </Button>
      {adding && (
        <Suspense fallback={null}>
          <AddShortcutDialog onClose={() => setAdding(false)} />
        </Suspense>
      )}
    </>
  );
}
