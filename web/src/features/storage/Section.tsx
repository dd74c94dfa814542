import type { ReactNode } from 'react';
import { Typography } from 'antd';

/** One titled block of the storage panel, with an optional right-hand note. */
export function Section({
  title,
  extra,
  children,
}: {
  title: ReactNode;
  extra?: ReactNode;
  children: ReactNode;
}) {
  return (
    <section style={{ marginTop: 16 }}>
      <div style={{ display: 'flex', alignItems: 'center', marginBottom: 8 }}>
        <Typography.Text strong style={{ flex: 1 }}>
          {title}
        </Typography.Text>
        {extra}
      </div>
      {children}
    </section>
  );
}
