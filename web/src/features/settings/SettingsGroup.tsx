import type { ReactNode } from 'react';
import { Typography, theme } from 'antd';

/** One group of the settings sidebar (SPEC 2), titled, always expanded. */
export function SettingsGroup(props: { title: ReactNode; testId: string; children: ReactNode }) {
  const { token } = theme.useToken();
  return (
    <section
      data-testid={props.testId}
      style={{ padding: '12px 16px', borderBottom: `1px solid ${token.colorBorderSecondary}` }}
    >
      <Typography.Title level={5} style={{ marginTop: 0 }}>
        {props.title}
      </Typography.Title>
      {props.children}
    </section>
  );
}

/** One labelled setting inside a group. */
export function SettingsField({ label, children }: { label: ReactNode; children: ReactNode }) {
  return (
    <div style={{ marginBottom: 12 }}>
      <Typography.Text type="secondary" style={{ display: 'block', marginBottom: 4 }}>
        {label}
      </Typography.Text>
      {children}
    </div>
  );
}
