// The one script: every few seconds it reads the page again and swaps in its live parts
// ([data-refresh]), unless the operator is typing in a form, has the keyboard focus in a
// live part, or the tab is hidden. Without it the pages read the same; reloading
// refreshes them.
"use strict";
const EVERY_MS = 4000;
function busy() {
  const active = document.activeElement;
  if (active && (active.closest("form") || active.closest("[data-refresh]"))) return true;
  return [...document.querySelectorAll("form textarea, form input:not([type=hidden])")]
    .some((field) => field.value !== field.defaultValue);
}
async function refresh() {
  if (document.hidden || busy()) return;
  const response = await fetch(location.href, { headers: { Accept: "text/html" } });
  if (!response.ok) return;
  const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
  for (const live of document.querySelectorAll("[data-refresh][id]")) {
    const next = fresh.getElementById(live.id);
    if (next && next.innerHTML !== live.innerHTML) live.innerHTML = next.innerHTML;
    // A part that is done changing (an ended stand-in) is read no more.
    if (next && !next.hasAttribute("data-refresh")) live.removeAttribute("data-refresh");
  }
}
// One read at a time: the next is planned when the last has answered.
function every() {
  refresh().catch(() => {}).finally(() => {
    if (document.querySelector("[data-refresh]")) setTimeout(every, EVERY_MS);
  });
}
if (document.querySelector("[data-refresh]")) setTimeout(every, EVERY_MS);
