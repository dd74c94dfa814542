import { useId, useState, type ReactNode } from 'react';
import { theme } from 'antd';
import { DownOutlined, RightOutlined } from '@ant-design/icons';

/**
 * One group of the toolbox or the external devices section (SPEC 2 left panel): a titled
 * section that folds. The title is a real button (Tab reaches it, Enter and Space fold it) with
 * `aria-expanded` and `aria-controls`; a folded group stays mounted, hidden, so what is typed
 * in it or running in it is kept.
 */
export function CollapsibleGroup(props: {
  title: ReactNode;
  testId: string;
  children: ReactNode;
  defaultOpen?: boolean;
}) {
  const { token } = theme.useToken();
  const [open, setOpen] = useState(props.defaultOpen ?? true);
  const bodyId = useId();
  return (
    <section
      data-testid={props.testId}
      data-open={open ? 'true' : 'false'}
      style={{ borderBottom: `1px solid ${token.colorBorderSecondary}` }}
    >
      <button
        type="button"
        aria-expanded={open}
        aria-controls={bodyId}
        onClick={() => setOpen((o) => !o)}
        data-testid={`${props.testId}-toggle`}
        style={{
          display: 'flex',
          alignItems: 'center',
          gap: 8,
          width: '100%',
          padding: '12px 16px',
          border: 'none',
          background: 'transparent',
          color: token.colorText,
          font: 'inherit',
          fontWeight: token.fontWeightStrong,
          fontSize: token.fontSizeLG,
          textAlign: 'left',
          cursor: 'pointer',
        }}
      >
        {open ? (
          <DownOutlined style={{ fontSize: 12 }} />
        ) : (
          <RightOutlined style={{ fontSize: 12 }} />
        )}
        <span style={{ flex: 1 }}>{props.title}</span>
      </button>
      <div id={bodyId} hidden={!open} style={{ padding: '0 16px 16px' }}>
        {props.children}
      </div>
    </section>
  );
}
