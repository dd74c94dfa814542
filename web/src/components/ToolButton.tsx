import type { ReactNode } from 'react';
import { Button, Tooltip } from 'antd';
import { layoutRules } from '../lib/layout-rules';
import { useViewport } from './hooks';

/**
 * An icon button of the toolbar with its tooltip; `active` shows a toggle that is on.
 * The title is also written beside the icon from 1920 px (SPEC 9's large breakpoint,
 * lib/layout-rules.ts) unless `showLabel` says otherwise.
 */
export function ToolButton(props: {
  title: string;
  icon: ReactNode;
  onClick: () => void;
  testId: string;
  active?: boolean;
  showLabel?: boolean;
}) {
  const wide = layoutRules(useViewport()).toolbarLabels;
  const showLabel = props.showLabel ?? wide;
  return (
    <Tooltip title={props.title} placement="bottom">
      <Button
        type={props.active ? 'primary' : 'text'}
        icon={props.icon}
        aria-label={props.title}
        aria-pressed={props.active}
        onClick={props.onClick}
        data-testid={props.testId}
      >
        {showLabel ? props.title : null}
      </Button>
    </Tooltip>
  );
}
