import type { ReactNode } from 'react';
import { Button, Tooltip } from 'antd';

/** An icon button of the toolbar with its tooltip; `active` shows a toggle that is on. */
export function ToolButton(props: {
  title: string;
  icon: ReactNode;
  onClick: () => void;
  testId: string;
  active?: boolean;
}) {
  return (
    <Tooltip title={props.title} placement="bottom">
      <Button
        type={props.active ? 'primary' : 'text'}
        icon={props.icon}
        aria-label={props.title}
        aria-pressed={props.active}
        onClick={props.onClick}
        data-testid={props.testId}
      />
    </Tooltip>
  );
}
