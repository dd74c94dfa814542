/** What a user group's card and a device group's card share: the card with its delete button, and a removable tag. */
import type { ReactNode } from 'react';
import { Button, Card, Tag } from 'antd';
import { useT } from '../i18n';

export function GroupCard(props: {
  title: string;
  groupId: string;
  testId: string;
  onDelete: () => void;
  children: ReactNode;
}) {
  const t = useT();
  return (
    <Card
      size="small"
      title={props.title}
      data-testid={props.testId}
      data-group-id={props.groupId}
      extra={
        <Button size="small" danger onClick={props.onDelete} data-testid="group-delete">
          {t('common.delete')}
        </Button>
      }
    >
      {props.children}
    </Card>
  );
}

/** A member of a group, with a close button that removes it (the group's answer removes the tag). */
export function RemovableTag(props: {
  label: string;
  testId: string;
  deviceId?: string;
  onRemove: () => void;
}) {
  return (
    <Tag
      closable
      onClose={(e) => {
        e.preventDefault();
        props.onRemove();
      }}
      data-testid={props.testId}
      data-device-id={props.deviceId}
    >
      {props.label}
    </Tag>
  );
}
