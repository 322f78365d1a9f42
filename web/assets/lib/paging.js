// Lists read a page at a time: a "Show more …" button under the list reads the next page, puts
// its items at the end of the list, moves the keyboard's focus to the first of them, and gives
// way to a button for the page after, if there is one.

import { el } from './format.js';
import { showProblem } from './layout.js';

/**
 * The pages of `list` after its first. `read(next)` reads the page that `next` names (a cursor,
 * a page number: whatever the list's API pages by) and answers `{ items, next, shown }`: the
 * page's elements, what names the page after it (absent on the last), and optionally what to do
 * once they are in the list (e.g. update its count). `focusOf(item)` is the element
 * in an item that takes the focus (the item itself by default). The button (`id`, `label`) goes
 * right after `list`, outside it, so a `role="list"` keeps only its items.
 *
 * Call `show(next)` each time the list is shown afresh: a page read for the list shown before is
 * dropped when it comes, not added to the new one. `clear()` empties the list instead.
 */
export function pager(list, { id, label, read, focusOf = (item) => item }) {
  let shown = 0;
  let button = null;

  function place(next) {
    button?.remove();
    button = null;
    if (!next) return;
    const mine = shown;
    const b = el('button', { type: 'button', id, className: 'more-button' }, label);
    b.addEventListener('click', async () => {
      b.disabled = true;
      try {
        const page = await read(next);
        if (mine !== shown) return;
        list.append(...page.items);
        place(page.next);
        page.shown?.();
        // The keyboard's place was the button, now gone: the first item added takes it.
        if (page.items.length) focusOf(page.items[0])?.focus();
      } catch (e) {
        if (mine !== shown || e.name === 'AbortError') return;
        b.disabled = false;
        showProblem(e);
      }
    });
    list.after(b);
    button = b;
  }

  return {
    show(next) {
      shown += 1;
      place(next);
    },
    /** Empties the list and drops its button: what it showed answered a read that has since
     * failed, or someone who has signed out. */
    clear() {
      list.replaceChildren();
      this.show(null);
    },
  };
}
