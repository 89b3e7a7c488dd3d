// Horcrux Hunt in the browser: the lobby, both seats, spectators and the replay, on the
// public HTTP API only (docs/API.md, docs/WEB.md). No framework, no build step.
// Safety: every element is built with createElement + text nodes (no HTML is parsed), so a
// server string (a name, a brain, a message) is always text; seat tokens live in
// localStorage, are sent only in the Authorization header and never appear in a URL.

// the entry point (index.html loads it as a module): each screen and its helpers are a
// module of their own, imported by relative name (no build step).

import { loadConfig, loadWords } from "./api.js";
import { state } from "./dom.js";
import { route } from "./routes.js";
import { refreshSoon } from "./seat.js";

// ------------------------------------------------------------------ start
window.addEventListener("hashchange", route);
document.addEventListener("visibilitychange", () => {
  if (!document.hidden && state.current && state.current.kind === "game" && state.current.game && state.current.game.status !== "over") refreshSoon(state.current);
});
loadConfig().then(loadWords).then(route);
