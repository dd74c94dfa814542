/**
 * The virtual keyboard (SPEC 2): a PC-105 keyboard whose caps show the selected keymap
 * (`keymap` setting), floating over the remote screen or docked below it. Loaded on demand by
 * VirtualKeyboardHost: most visits never open it.
 */
import {
  useEffect,
  useRef,
  useState,
  useSyncExternalStore,
  type CSSProperties,
  type PointerEvent as ReactPointerEvent,
  type ReactNode,
} from 'react';
import { createPortal } from 'react-dom';
import { Button, Tooltip, Typography, theme } from 'antd';
import { BlockOutlined, CloseOutlined, VerticalAlignBottomOutlined } from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import { DEFAULT_KEYMAP } from '@kvm/protocol/enums';
import { useConfig } from '../config/config-store';
import { capText, type CapText } from './cap-text';
import { virtualKeyInput } from './keyboard-session';
import { keymapLayouts, type LayoutEntry } from './keymap-layouts';
import { MAIN_BLOCK, MAIN_BLOCK_UNITS, NAV_BLOCK, NAV_BLOCK_UNITS, type Cap } from './pc105';
import {
  keyLevel,
  setKeyboardMode,
  useVirtualKeyboard,
  type OpenKeyboardMode,
} from './virtual-keyboard-store';

const KEY_HEIGHT = 34;
const KEY_GAP = 4;
const FLOATING_WIDTH = 760;
const EDGE = 8;

function useLayout(name: string): LayoutEntry {
  useEffect(() => {
    void keymapLayouts.load(name);
  }, [name]);
  return useSyncExternalStore(keymapLayouts.subscribe, () => keymapLayouts.peek(name));
}

function Key(props: {
  code: string;
  width: number;
  text: CapText;
  held: boolean;
  onPress: (code: string) => void;
  onRelease: (code: string) => void;
}) {
  const { token } = theme.useToken();
  const { code, width, text, held } = props;
  const onPointerDown = (e: ReactPointerEvent<HTMLButtonElement>) => {
    // Keep the focus where it is (the remote screen keeps capturing the physical keyboard).
    e.preventDefault();
    if (e.button !== 0) return;
    try {
      e.currentTarget.setPointerCapture(e.pointerId);
    } catch {
      // No capture (synthetic events): pointerup still arrives on the key in practice.
    }
    props.onPress(code);
  };
  const release = () => props.onRelease(code);
  const style: CSSProperties = {
    flex: `${width} ${width} 0`,
    minWidth: 0,
    height: KEY_HEIGHT,
    position: 'relative',
    padding: '0 4px',
    border: `1px solid ${held ? token.colorPrimary : token.colorBorder}`,
    borderRadius: token.borderRadiusSM,
    background: held ? token.colorPrimary : token.colorBgContainer,
    color: held ? token.colorTextLightSolid : token.colorText,
    fontSize: text.fallback ? 10 : text.main.length > 2 ? 11 : 14,
    lineHeight: 1.1,
    overflow: 'hidden',
    whiteSpace: 'nowrap',
    cursor: 'pointer',
    userSelect: 'none',
    touchAction: 'none',
    display: 'flex',
    flexDirection: 'column',
    alignItems: 'flex-start',
    justifyContent: 'center',
  };
  return (
    <button
      type="button"
      data-testid={`vk-${code}`}
      aria-label={code}
      aria-pressed={held}
      tabIndex={-1}
      style={style}
      onPointerDown={onPointerDown}
      onPointerUp={release}
      onPointerCancel={release}
      onLostPointerCapture={release}
      onContextMenu={(e) => e.preventDefault()}
    >
      {text.top !== undefined && <span>{text.top}</span>}
      <span>{text.main}</span>
      {text.altgr !== undefined && (
        <span
          style={{
            position: 'absolute',
            right: 3,
            bottom: 2,
            fontSize: 9,
            color: held ? token.colorTextLightSolid : token.colorTextSecondary,
          }}
        >
          {text.altgr}
        </span>
      )}
    </button>
  );
}

function Block(props: {
  rows: readonly (readonly Cap[])[];
  units: number;
  renderKey: (code: string, width: number) => ReactNode;
}) {
  return (
    <div
      style={{
        flex: `${props.units} ${props.units} 0`,
        display: 'flex',
        flexDirection: 'column',
        gap: KEY_GAP,
      }}
    >
      {props.rows.map((row, r) => (
        <div key={r} style={{ display: 'flex', gap: KEY_GAP }}>
          {row.map((cap, i) =>
            'code' in cap ? (
              props.renderKey(cap.code, cap.width ?? 1)
            ) : (
              <div key={`gap-${i}`} style={{ flex: `${cap.gap} ${cap.gap} 0`, minWidth: 0 }} />
            ),
          )}
        </div>
      ))}
    </div>
  );
}

/** Where a dragged floating keyboard was left, kept while the page lives. */
let floatingPosition: { left: number; top: number } | null = null;

function clampPosition(left: number, top: number, width: number, height: number) {
  return {
    left: Math.min(Math.max(EDGE, left), Math.max(EDGE, window.innerWidth - width - EDGE)),
    top: Math.min(Math.max(EDGE, top), Math.max(EDGE, window.innerHeight - height - EDGE)),
  };
}

export interface VirtualKeyboardProps {
  mode: OpenKeyboardMode;
}

export default function VirtualKeyboard({ mode }: VirtualKeyboardProps) {
  const { t } = useTranslation();
  const { token } = theme.useToken();
  const keymap = useConfig((s) => s.config?.keymap) ?? DEFAULT_KEYMAP;
  const layout = useLayout(keymap);
  const keys = useSyncExternalStore(virtualKeyInput.subscribe, virtualKeyInput.getSnapshot);
  const chosen = useVirtualKeyboard((s) => s.chosen);
  const adding = useVirtualKeyboard((s) => s.adding);
  const panelRef = useRef<HTMLDivElement>(null);
  const [position, setPosition] = useState(floatingPosition);
  const drag = useRef<{ dx: number; dy: number } | null>(null);

  // Closing (or leaving the page) must not leave a latched modifier held on the remote.
  useEffect(() => () => virtualKeyInput.releaseAll(), []);

  const level = keyLevel(keys.latched);
  const renderKey = (code: string, width: number) => (
    <Key
      key={code}
      code={code}
      width={width}
      text={capText(code, layout, level)}
      held={keys.latched.includes(code) || keys.down === code}
      onPress={(c) => virtualKeyInput.press(c)}
      onRelease={(c) => virtualKeyInput.release(c)}
    />
  );

  const onDragStart = (e: ReactPointerEvent<HTMLDivElement>) => {
    const panel = panelRef.current;
    if (mode !== 'floating' || !panel || e.button !== 0) return;
    if ((e.target as HTMLElement).closest('button')) return;
    e.preventDefault();
    const rect = panel.getBoundingClientRect();
    drag.current = { dx: e.clientX - rect.left, dy: e.clientY - rect.top };
    try {
      e.currentTarget.setPointerCapture(e.pointerId);
    } catch {
      // See Key.
    }
  };
  const onDragMove = (e: ReactPointerEvent<HTMLDivElement>) => {
    const panel = panelRef.current;
    if (!drag.current || !panel) return;
    const next = clampPosition(
      e.clientX - drag.current.dx,
      e.clientY - drag.current.dy,
      panel.offsetWidth,
      panel.offsetHeight,
    );
    floatingPosition = next;
    setPosition(next);
  };
  const onDragEnd = () => {
    drag.current = null;
  };

  // The docked mode cannot be chosen while something forces floating (SPEC 2).
  const forced = mode === 'floating' && chosen === 'fixed';
  const header = (
    <div
      onPointerDown={onDragStart}
      onPointerMove={onDragMove}
      onPointerUp={onDragEnd}
      onPointerCancel={onDragEnd}
      style={{
        display: 'flex',
        alignItems: 'center',
        gap: 4,
        marginBottom: 6,
        cursor: mode === 'floating' ? 'move' : 'default',
        touchAction: 'none',
        userSelect: 'none',
      }}
    >
      <Typography.Text strong style={{ flex: 1 }} ellipsis>
        {adding ? t('keyboard.pickKeys') : t('keyboard.title')}
      </Typography.Text>
      {!adding && (
        <>
          <Tooltip title={t('keyboard.floating')}>
            <Button
              size="small"
              type={mode === 'floating' ? 'primary' : 'text'}
              icon={<BlockOutlined />}
              aria-label={t('keyboard.floating')}
              onClick={() => setKeyboardMode('floating')}
              data-testid="vk-mode-floating"
            />
          </Tooltip>
          <Tooltip title={forced ? t('keyboard.forcedFloating') : t('keyboard.fixed')}>
            <Button
              size="small"
              type={mode === 'fixed' ? 'primary' : 'text'}
              icon={<VerticalAlignBottomOutlined />}
              aria-label={t('keyboard.fixed')}
              disabled={forced}
              onClick={() => setKeyboardMode('fixed')}
              data-testid="vk-mode-fixed"
            />
          </Tooltip>
          <Tooltip title={t('keyboard.close')}>
            <Button
              size="small"
              type="text"
              icon={<CloseOutlined />}
              aria-label={t('keyboard.close')}
              onClick={() => setKeyboardMode('closed')}
              data-testid="vk-close"
            />
          </Tooltip>
        </>
      )}
    </div>
  );

  const body = (
    <div style={{ display: 'flex', gap: KEY_GAP * 3 }}>
      <Block rows={MAIN_BLOCK} units={MAIN_BLOCK_UNITS} renderKey={renderKey} />
      <Block rows={NAV_BLOCK} units={NAV_BLOCK_UNITS} renderKey={renderKey} />
    </div>
  );

  if (mode === 'fixed') {
    return (
      <section
        data-testid="virtual-keyboard"
        data-mode="fixed"
        data-keymap={keymap}
        style={{
          flex: 'none',
          padding: 8,
          background: token.colorBgLayout,
          borderTop: `1px solid ${token.colorBorderSecondary}`,
        }}
      >
        <div style={{ maxWidth: 1100, margin: '0 auto' }}>
          {header}
          {body}
        </div>
      </section>
    );
  }

  const placement: CSSProperties = position
    ? { left: position.left, top: position.top }
    : { left: '50%', bottom: 56, transform: 'translateX(-50%)' };
  return createPortal(
    <section
      ref={panelRef}
      data-testid="virtual-keyboard"
      data-mode="floating"
      data-keymap={keymap}
      style={{
        position: 'fixed',
        ...placement,
        width: FLOATING_WIDTH,
        maxWidth: `calc(100vw - ${EDGE * 2}px)`,
        padding: 8,
        // Above an open modal while a shortcut's keys are picked on it (antd modals are 1000,
        // their dropdowns 1050).
        zIndex: adding ? 1001 : 20,
        background: token.colorBgElevated,
        borderRadius: token.borderRadiusLG,
        boxShadow: token.boxShadowSecondary,
        border: `1px solid ${token.colorBorderSecondary}`,
        opacity: 0.97,
      }}
    >
      {header}
      {body}
    </section>,
    document.body,
  );
}
