// Horcrux Hunt in the browser: routing (#/..., no secrets) and the keyboard.

import { running } from "./api.js";
import { h, state } from "./dom.js";
import { gameScreen, inviteScreen, renderGame } from "./game.js";
import { lobbyScreen } from "./lobby.js";
import { replayKey, replayScreen } from "./replay.js";
import { choose, pick, targets } from "./seat.js";

// ------------------------------------------------------------------ routing (#/..., no secrets)
export function stop() {
  if (state.current && state.current.timer) clearTimeout(state.current.timer);
  if (state.current && state.current.paceTimer) clearTimeout(state.current.paceTimer);
  state.current = null;
}
export function route() {
  stop();
  const [, kind, id] = (window.location.hash || "#/").split("/");
  if (kind === "game" && id) return gameScreen(decodeURIComponent(id));
  if (kind === "replay" && id) return replayScreen(decodeURIComponent(id));
  if (kind === "invite" && id) return inviteScreen(decodeURIComponent(id), decodeURIComponent((window.location.hash.split("/")[3] || "")));
  return lobbyScreen();
}
export const go = (hash) => {
  if (window.location.hash === hash) route();
  else window.location.hash = hash;
};


// ------------------------------------------------------------------ keyboard
export const KEYS = { s: "search", a: "attack", r: "ron", h: "hermione", d: "dumbledore" };
export const VKEYS = { m: "relocate", d: "plant_decoy", p: "pass" };
document.addEventListener("keydown", (ev) => {
  if (ev.target instanceof HTMLInputElement || ev.target instanceof HTMLSelectElement || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const screen = state.current;
  if (!screen) return;
  if (screen.kind === "replay") return replayKey(screen, ev);
  if (screen.kind !== "game" || !screen.game) return;
  const g = screen.game;
  const key = ev.key.toLowerCase();
  if (key === "b" && g.your_seat !== "voldemort") {
    screen.showBelief = !screen.showBelief;
    return renderGame(screen);
  }
  if (!(running(g) && g.to_move === g.your_seat && g.legal)) return;
  const action = (g.your_seat === "harry" ? KEYS : VKEYS)[key];
  const locs = g.view.rules.locations;
  if (action) {
    ev.preventDefault();
    const first = new Set(targets({ ...screen, action, picks: [] }));
    choose(screen, action);
    screen.keyboard = true;
    const start = locs.findIndex((l) => first.has(l));
    if (start >= 0 && screen.action) {
      screen.cursor = start;
      renderGame(screen);
    }
    return;
  }
  if (!screen.action) return;
  const move = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: 5, ArrowUp: -5 }[ev.key];
  if (move) {
    ev.preventDefault();
    screen.keyboard = true;
    screen.cursor = (screen.cursor + move + locs.length) % locs.length;
    renderGame(screen);
  } else if (ev.key === "Enter" || ev.key === " ") {
    ev.preventDefault();
    pick(screen, locs[screen.cursor]);
  } else if (ev.key === "Escape") {
    screen.action = null;
    screen.picks = [];
    renderGame(screen);
  }
});
