import { useState } from 'react';
import { Button, Dropdown, Tooltip, type MenuProps } from 'antd';
import { DeleteOutlined, PlusOutlined, ThunderboltOutlined } from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import { displayLabel, shortcutLabel } from './shortcuts';
import { sendShortcut, useShortcutList } from './use-shortcut-list';

/** The delete button of one of the user's shortcuts (this menu's item, the toolbox's row). */
export function DeleteShortcutButton({
  testId,
  onDelete,
}: {
  testId: string;
  onDelete: () => void;
}) {
  const { t } = useTranslation();
  return (
    <Button
      size="small"
      type="text"
      danger
      icon={<DeleteOutlined />}
      aria-label={t('shortcuts.delete')}
      data-testid={testId}
      onClick={(e) => {
        // Deleting is not choosing: the menu item must not send it.
        e.stopPropagation();
        onDelete();
      }}
    />
  );
}

/**
 * SPEC 2/3 toolbar shortcuts: the built-ins, then the user's own (each can be deleted), then
 * "Add shortcut".
 */
export function ShortcutsMenu({ onAdd }: { onAdd: () => void }) {
  const [menuOpen, setMenuOpen] = useState(false);
  const { t } = useTranslation();
  const { builtin, saved, remove } = useShortcutList();

  const items: MenuProps['items'] = [
    {
      type: 'group',
      key: 'builtin',
      label: t('shortcuts.builtin'),
      children: builtin.map((s, i) => ({
        key: `builtin-${i}`,
        label: <span data-testid={`shortcut-builtin-${i}`}>{s.label}</span>,
      })),
    },
    {
      type: 'group',
      key: 'saved',
      label: t('shortcuts.saved'),
      children:
        saved.length === 0
          ? [{ key: 'none', disabled: true, label: t('shortcuts.none') }]
          : saved.map((s, i) => ({
              key: `saved-${i}`,
              label: (
                <span
                  data-testid={`shortcut-saved-${i}`}
                  title={shortcutLabel(s.keys)}
                  style={{ display: 'flex', alignItems: 'center', gap: 8 }}
                >
                  <span style={{ flex: 1 }}>{displayLabel(s)}</span>
                  <DeleteShortcutButton
                    testId={`shortcut-delete-${i}`}
                    onDelete={() => void remove(i)}
                  />
                </span>
              ),
            })),
    },
    { type: 'divider' },
    {
      key: 'add',
      icon: <PlusOutlined />,
      label: <span data-testid="shortcut-add">{t('shortcuts.add')}</span>,
    },
  ];

  const onClick: MenuProps['onClick'] = ({ key }) => {
    if (key === 'add') {
      onAdd();
      return;
    }
    const [group, index] = key.split('-');
    const list = group === 'builtin' ? builtin : saved;
    const shortcut = list[Number(index)];
    if (shortcut) sendShortcut(shortcut.keys);
  };

  return (
    <Dropdown
      menu={{ items, onClick }}
      trigger={['click']}
      placement="bottom"
      onOpenChange={setMenuOpen}
    >
      {/* The tooltip would sit over the open menu's first item: hidden while it is open. */}
      <Tooltip
        title={t('shortcuts.menu')}
        placement="bottom"
        {...(menuOpen ? { open: false } : {})}
      >
        <Button
          type="text"
          icon={<ThunderboltOutlined />}
          aria-label={t('shortcuts.menu')}
          data-testid="toolbar-shortcuts"
        />
      </Tooltip>
    </Dropdown>
  );
}
