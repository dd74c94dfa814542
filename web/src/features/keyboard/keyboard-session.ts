/**
 * The virtual keyboard's input, wired to the console's one HidSender, and the add-shortcut
 * capture (SPEC 2: the keyboard is forced to floating while a shortcut is being added).
 */
import { hidSender } from '../input/input-session';
import { setAddingShortcut, VirtualKeyInput } from './virtual-keyboard-store';

export const virtualKeyInput = new VirtualKeyInput(hidSender);

// The sender releases everything on blur or hidden tab: caps must not stay shown as latched.
hidSender.subscribe(() => virtualKeyInput.syncHeld(hidSender.pressedKeys));

/**
 * Starts picking a shortcut's keys on the virtual keyboard: its presses go to `onKey` and nothing
 * reaches the remote computer until the returned function ends it.
 */
export function beginShortcutCapture(onKey: (code: string) => void): () => void {
  virtualKeyInput.setCapture(onKey);
  setAddingShortcut(true);
  return () => {
    virtualKeyInput.setCapture(null);
    setAddingShortcut(false);
  };
}
