import { Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import WolPanel from '../wol/WolPanel';
import { ClipboardGroup } from './ClipboardGroup';
import { CollapsibleGroup } from './CollapsibleGroup';
import { ShortcutsGroup } from './ShortcutsGroup';
import { TerminalGroup } from './TerminalGroup';

/**
 * SPEC 2 left panel "toolbox" (GL: clipboard, shortcuts, Wake-on-LAN, terminal). Every group is
 * the toolbar's own feature in a foldable group, never a copy: the paste form, the shortcut
 * list, the wake-on-LAN panel, the terminal opener. A lazy chunk of its own (MainLayout).
 */
export default function ToolboxPanel() {
  const { t } = useTranslation();
  return (
    <div data-testid="toolbox-panel">
      <Typography.Title level={4} style={{ margin: 0, padding: '12px 16px 0' }}>
        {t('toolbox.title')}
      </Typography.Title>
      <CollapsibleGroup title={t('toolbox.clipboard')} testId="toolbox-clipboard">
        <ClipboardGroup />
      </CollapsibleGroup>
      <CollapsibleGroup title={t('shortcuts.menu')} testId="toolbox-shortcuts">
        <ShortcutsGroup />
      </CollapsibleGroup>
      <CollapsibleGroup title={t('wol.title')} testId="toolbox-wol">
        <WolPanel />
      </CollapsibleGroup>
      <CollapsibleGroup title={t('terminal.title')} testId="toolbox-terminal">
        <TerminalGroup />
      </CollapsibleGroup>
    </div>
  );
}
