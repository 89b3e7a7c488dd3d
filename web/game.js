// Horcrux Hunt in the browser: a game (a seat or a spectator): evidence, refresh, invites, the pace.

import { api, fill, heldSeats, leaveSeat, leftSays, markOver, pct, playerName, running } from "./api.js";
import { GUIDE_KEY, PACE_MS, POLL_MS, confirmButton, h, message, messageBox, seatName, show, state, who } from "./dom.js";
import { joinGame } from "./lists.js";
import { go } from "./routes.js";
import { controls, endPanel, harryPanel, logPanel, renderBoard, voldemortPanel } from "./seat.js";

// ------------------------------------------------------------------ evidence (Harry's own)
// Each location's odds from Harry's public evidence alone (independent locations, Bayes on
// the sensors of the rules; an attack or a reveal settles a location). An approximation,
// labelled as such: the AI planner also prices in Voldemort's relocations.
export function evidence(rules, history, horcruxesLeft) {
  const locs = rules.locations;
  const score = Object.fromEntries(locs.map((l) => [l, 0]));
  const settled = {};
  const sensor = (who) => (who === "hermione" && rules.allies.hermione && rules.allies.hermione.sensor) || rules.sensor;
  for (const rec of history) {
    for (const o of rec.observations) {
      if (o.kind === "search") {
        const s = sensor(o.sensor);
        score[o.location] += o.outcome === "positive" ? Math.log(s.d / s.f) : Math.log((1 - s.d) / (1 - s.f));
        delete settled[o.location];
      } else {
        score[o.location] = 0;
        settled[o.location] = o.kind === "reveal" && o.outcome === "horcrux" ? 1 : 0;
      }
    }
  }
  const open = locs.filter((l) => !(l in settled) || settled[l] === 1).length || 1;
  const prior = Math.min(0.95, Math.max(0.01, horcruxesLeft / open));
  const logit = Math.log(prior / (1 - prior));
  const p = {};
  for (const l of locs) p[l] = l in settled ? settled[l] : 1 / (1 + Math.exp(-(logit + score[l])));
  return { p, score };
}
// how unsure a belief is, in words: its entropy as a share of the most there can be
export function unsure(entropy, rules) {
  const most = Math.log2(rules.locations.length);
  const share = Math.max(0, Math.min(1, entropy / most));
  const word = share < 0.25 ? "nearly sure" : share < 0.5 ? "fairly sure" : share < 0.8 ? "unsure" : "with almost no idea";
  return `${word} (${Math.round(share * 100)}% of the most uncertainty there can be)`;
}
export function entropyBits(p) {
  const total = Object.values(p).reduce((a, b) => a + b, 0);
  if (total <= 0) return 0;
  let e = 0;
  for (const v of Object.values(p)) if (v > 0) e -= (v / total) * Math.log2(v / total);
  return e;
}

// ------------------------------------------------------------------ a game (a seat or a spectator)
export async function gameScreen(gameId) {
  const held = heldSeats()[gameId];
  const screen = (state.current = {
    kind: "game",
    id: gameId,
    token: held ? held.token : null,
    timer: null,
    idle: 0,
    busy: false,
    action: null,
    picks: [],
    cursor: 0,
    game: null,
    etag: null,
    stale: false,
    lastEvent: null,
    showBelief: false,
  });
  show(h("section", { "data-testid": "game" }, messageBox(), h("p", { class: "muted" }, "Loading the game…")));
  await refreshGame(screen, true);
}

export async function refreshGame(screen, first) {
  if (state.current !== screen) return;
  try {
    const headers = screen.etag ? { "if-none-match": screen.etag } : {};
    const r = await api("GET", `/games/${encodeURIComponent(screen.id)}`, { token: screen.token, headers });
    if (state.current !== screen) return;
    const seen = screen.live || screen.game;
    if (r.status === 304 || (seen && r.data.version === seen.version)) {
      screen.idle += 1;
    } else {
      if (pacedFor(screen, r.data)) {
        screen.live = r.data; // the game as it is; the page shows it turn by turn
        if (!screen.pace) startPace(screen);
        screen.game = pacedView(screen);
      } else screen.game = r.data;
      screen.etag = r.etag;
      if (r.data.status === "over") markOver(screen.id);
      screen.idle = 0;
      renderGame(screen);
    }
  } catch (err) {
    if (state.current !== screen) return;
    if (err.status === 401 && screen.token) {
      screen.stale = true;
      screen.token = null;
      renderStale(screen, err);
      return; // no polling with a token the server refuses
    }
    if (err.status === 404) {
      show(h("section", { "data-testid": "game" }, messageBox(), h("p", {}, h("a", { href: "#/" }, "Back to the lobby"))));
      message(`No such game (${err.message}). It may have expired.`);
      return;
    }
    screen.idle += 1;
    if (first && !screen.game) show(h("section", { "data-testid": "game" }, messageBox()));
    message(err.message);
  }
  schedule(screen);
}
export function schedule(screen) {
  if (state.current !== screen) return;
  clearTimeout(screen.timer);
  const g = screen.game;
  if (g && g.status === "over") return;
  let wait = POLL_MS[Math.min(screen.idle, POLL_MS.length - 1)];
  if (g && running(g) && g.to_move === g.your_seat) wait = 10000; // only I can move
  if (document.hidden) wait = Math.max(wait, 10000);
  screen.timer = setTimeout(() => refreshGame(screen, false), wait);
}

export function renderStale(screen, err) {
  show(
    h(
      "section",
      { "data-testid": "game" },
      messageBox(),
      h(
        "div",
        { class: "panel" },
        h("h2", {}, "This seat's token is not valid any more"),
        h("p", {}, "The server refused the token this browser keeps for the game, so nothing can be played with it. Leave the game to forget it; you can still watch it from the lobby."),
        h(
          "div",
          { class: "row" },
          confirmButton("Leave this game", "Leave? This browser forgets the seat.", "Yes, leave", () => { leaveSeat(screen.id); go("#/"); }, "leave"),
          h("button", { onclick: () => go("#/") }, "Back to the lobby"),
        ),
      ),
    ),
  );
  message(`Your seat token for game ${screen.id} was refused (${err.code}): ${err.message}`);
}

export function renderGame(screen) {
  const g = screen.game;
  const v = g.view;
  const mine = g.your_seat;
  const myTurn = running(g) && mine && g.to_move === mine && g.legal;
  // a two-person game: while the other seat moves, the page says whom it waits for
  const other = running(g) && mine && g.to_move !== mine && g.seats[g.to_move] && g.seats[g.to_move].kind === "human";
  const turnText =
    g.status === "over"
      ? "game over"
      : g.status === "open"
        ? "waiting for a second player"
        : `${seatName(g.to_move)} to move${myTurn ? " (you)" : ""}${other ? `: waiting for ${g.seats[g.to_move].name || "the other player"}` : ""}`;
  const header = h(
    "div",
    { class: "status", "data-testid": "status" },
    h("b", {}, `Turn ${Math.min(v.turn, v.rules.max_turns)} / ${v.rules.max_turns}`),
    h("span", { "data-testid": "to-move" }, turnText),
    h("span", { class: "pill" }, `${g.rules} rules`),
    h("span", { class: `pill ${mine === "harry" ? "you" : ""}` }, `Harry: ${who(g, "harry")}`),
    h("span", { class: `pill ${mine === "voldemort" ? "you" : ""}` }, `Voldemort: ${who(g, "voldemort")}`),
    h("span", { class: "pill", "data-testid": "your-seat" }, mine ? `you are ${seatName(mine)}` : "you are watching"),
    g.status === "abandoned" ? h("span", { class: "pill", "data-testid": "left" }, fill((state.words.left || {}).label || "left", { minutes: (state.words.left || {}).minutes || 30 })) : null,
  );
  const nav = h(
    "div",
    { class: "row" },
    h("button", { onclick: () => go("#/") }, "Lobby"),
    screen.token ? confirmButton("Leave this game", "Leave? This browser forgets your seat, and nobody can play it from here again.", "Yes, leave", () => { leaveSeat(screen.id); go("#/"); }, "leave") : null,
    mine && localStorage.getItem(GUIDE_KEY) && !screen.guide ? h("button", { "data-testid": "guide-open", onclick: () => { screen.guide = true; renderGame(screen); } }, "Guide") : null,
    h("span", { class: "muted" }, "game ", h("code", {}, g.game_id)),
  );
  const parts = [messageBox(), nav, header];
  if (screen.pace) parts.push(pacePanel(screen));
  if (mine && g.status !== "over" && (screen.guide || !localStorage.getItem(GUIDE_KEY))) parts.push(guidePanel(screen));
  if (g.status === "over") parts.push(endPanel(screen));
  if (g.status === "abandoned") parts.push(h("div", { class: "panel", "data-testid": "left-note" }, h("p", {}, leftSays(g))));
  const held = heldSeats()[screen.id];
  if (g.status === "open" && held && held.invite) parts.push(invitePanel(screen, held.invite));
  else if (g.status === "open") {
    parts.push(h("div", { class: "panel" }, h("p", {}, "Waiting for someone to join from the lobby. This page updates by itself.")));
  }
  const board = renderBoard(screen);
  const side = mine === "voldemort" ? voldemortPanel(screen) : harryPanel(screen);
  parts.push(h("div", { class: "layout" }, h("div", {}, myTurn ? controls(screen) : null, board), h("div", {}, side, logPanel(screen))));
  show(h("section", { "data-testid": mine ? `seat-${mine}` : "spectator", class: "game" }, parts));
  if (screen.note) message(screen.note.text, screen.note.kind);
}

// The first-game guide: what the rules do to the obvious play, shown on a seat's page until
// dismissed (remembered in localStorage, so once per browser); "Guide" brings it back.
export function guidePanel(screen) {
  const r = screen.game.view.rules;
  const seat = screen.game.your_seat === "voldemort" ? "voldemort" : "harry";
  const vars = {
    d: r.sensor ? pct(r.sensor.d) : "80%",
    f: r.sensor ? pct(r.sensor.f) : "15%",
    attacks: r.attacks,
    decoys: r.decoys,
    relocations: r.relocations,
    turns: r.max_turns,
    horcruxes: r.horcruxes,
  };
  const close = () => {
    localStorage.setItem(GUIDE_KEY, String(Date.now()));
    screen.guide = false;
    renderGame(screen);
  };
  // the same four sentences as the terminal's `guide`, for this seat's player
  const ids = ["guide-search", "guide-attack", "guide-decoy", "guide-move"];
  const lines = (state.words.guide[seat] || []).map((text, i) => h("li", { "data-testid": ids[i] }, fill(text, vars)));
  if (seat === "harry" && r.allies && r.allies.dumbledore && lines[1]) lines[1].append(" Dumbledore's reveal tells the truth of one location.");
  return h(
    "div",
    { class: "panel guide", "data-testid": "guide", "data-seat": seat, role: "note" },
    h("h2", {}, seat === "voldemort" ? "Before you start: how you hide the Horcruxes" : "Before you start: four things the rules do"),
    h("ul", { class: "howto" }, lines),
    h("div", { class: "row" }, h("button", { class: "primary", "data-testid": "guide-dismiss", onclick: close }, "Got it")),
  );
}

// ------------------------------------------------------------------ private games: invites
// The link carries the code in its fragment (`#/invite/<id>/<code>`): a browser never sends
// a fragment to a server, so no server log, proxy or Referer records it.
export const inviteLink = (gameId, code) => `${window.location.origin}${window.location.pathname}#/invite/${encodeURIComponent(gameId)}/${encodeURIComponent(code)}`;
export function invitePanel(screen, code) {
  const link = h("input", { readonly: true, value: inviteLink(screen.id, code), "data-testid": "invite-link", "aria-label": "invite link", class: "wide" });
  const copy = async () => {
    link.select();
    try {
      await navigator.clipboard.writeText(link.value);
      message("The invite link is copied: send it to the person you invite.", "info");
    } catch {
      message("Copy the selected link by hand (the browser refused the clipboard).", "info");
    }
  };
  return h(
    "div",
    { class: "panel", "data-testid": "invite" },
    h("h3", {}, "A private game: invite someone"),
    h("p", {}, "This game is not listed in the lobby. Send this link to the person you want to play; it holds the invite code, so send it to them alone. This page updates by itself once they join."),
    h("div", { class: "row" }, link, h("button", { class: "primary", "data-testid": "copy-invite", onclick: copy }, "Copy the link")),
  );
}
export async function inviteScreen(gameId, code) {
  const screen = (state.current = { kind: "invite", id: gameId, timer: null });
  show(h("section", { "data-testid": "invited" }, messageBox(), h("p", { class: "muted" }, "Reading the game…")));
  let g;
  try {
    g = (await api("GET", `/games/${encodeURIComponent(gameId)}`)).data;
  } catch (err) {
    if (state.current !== screen) return;
    show(h("section", { "data-testid": "invited" }, messageBox(), h("div", { class: "row" }, h("button", { "data-testid": "back-to-lobby", onclick: () => go("#/") }, "Back to the lobby"))));
    return message(`This invite leads nowhere (${err.code}): ${err.message}`);
  }
  if (state.current !== screen) return;
  const free = ["harry", "voldemort"].filter((s) => g.seats[s] && g.seats[s].kind === "human" && !g.seats[s].taken);
  const nameInput = h("input", { "data-testid": "player-name", value: playerName(), placeholder: "optional, 1-32 characters", autocomplete: "nickname" });
  const host = ["harry", "voldemort"].map((s) => g.seats[s]).find((x) => x && x.taken && x.name);
  show(
    h(
      "section",
      { "data-testid": "invited" },
      messageBox(),
      h(
        "div",
        { class: "panel" },
        h("h2", {}, "You are invited to a private game"),
        h("p", {}, `${host ? host.name : "A player"} invites you (${g.rules} rules). `, free.length ? `Your seat: ${seatName(free[0])}.` : "Its seats are all taken."),
        free.length ? h("label", {}, h("span", {}, "Your name"), nameInput) : null,
        h(
          "div",
          { class: "row" },
          free.length ? h("button", { class: "primary", "data-testid": "accept-invite", onclick: () => joinGame(gameId, free[0], nameInput.value, code) }, `Join as ${seatName(free[0])}`) : null,
          h("button", { onclick: () => go("#/") }, "Back to the lobby"),
        ),
      ),
    ),
  );
}

// ------------------------------------------------------------------ a paced AI-vs-AI game
// An AI-vs-AI game is over in seconds; a spectator sees it at PACE_MS a turn instead, from
// the game already fetched (Harry's view: its history), with Pause / Play, Step and Live.
export function pacedFor(screen, g) {
  return !screen.token && !g.your_seat && ["harry", "voldemort"].every((s) => g.seats[s] && g.seats[s].kind === "ai");
}
export const pacedBehind = (screen) => Boolean(screen.pace && screen.live && screen.pace.shown < screen.live.view.history.length);
export function startPace(screen) {
  screen.pace = { shown: 0, playing: true };
  const tick = () => {
    if (state.current !== screen) return;
    const p = screen.pace;
    if (p.playing && pacedBehind(screen)) {
      p.shown += 1;
      screen.game = pacedView(screen);
      renderGame(screen);
    }
    if (!(screen.live.status === "over" && !pacedBehind(screen))) screen.paceTimer = setTimeout(tick, PACE_MS);
  };
  screen.paceTimer = setTimeout(tick, PACE_MS);
}
// the game as it stood before Harry's move number `shown` (0: the start): his view's first
// `shown` records, the counts that follow from them, Harry to move; once caught up, the game
export function pacedView(screen) {
  const live = screen.live;
  const all = live.view.history;
  const k = Math.min(screen.pace.shown, all.length);
  if (k >= all.length) return live;
  const hist = all.slice(0, k);
  const rules = live.view.rules;
  let destroyed = 0;
  let attacks = 0;
  for (const rec of hist) {
    if (rec.action && rec.action.type === "attack") attacks += 1;
    for (const o of rec.observations) if (o.kind === "attack" && o.outcome === "destroyed") destroyed += 1;
  }
  const turn = all[k].turn;
  const view = { ...live.view, history: hist, turn, horcruxes_destroyed: destroyed, horcruxes_left: rules.horcruxes - destroyed, attacks_left: rules.attacks - attacks, allies: {} };
  return { ...live, view, turn, status: "active", to_move: "harry", winner: null, end_reason: null, legal: null };
}
export function pacePanel(screen) {
  const p = screen.pace;
  const n = screen.live.view.history.length;
  const behind = pacedBehind(screen);
  const over = screen.live.status === "over";
  const say = behind
    ? `Paced: one turn a second; Harry's move ${p.shown + 1} of the ${n} played so far${over ? " (the game is over)" : ""}.`
    : over
      ? `Every one of Harry's ${n} moves shown: the game is over.`
      : "Caught up with the game: each new turn is shown as it is played.";
  const set = (fn) => () => {
    fn();
    screen.game = pacedView(screen);
    renderGame(screen);
  };
  return h(
    "div",
    { class: "panel", "data-testid": "pace", "data-shown": String(Math.min(p.shown, n)), "data-playing": String(p.playing) },
    h("p", { class: "muted", "data-testid": "pace-says" }, say, behind ? " The allies' state is shown once caught up." : ""),
    h(
      "div",
      { class: "row" },
      h("button", { "data-testid": "pace-toggle", disabled: over && !behind, onclick: set(() => { p.playing = !p.playing; }) }, p.playing && !(over && !behind) ? "Pause" : "Play"),
      h("button", { "data-testid": "pace-step", disabled: !behind, onclick: set(() => { p.playing = false; p.shown += 1; }) }, "Step"),
      h("button", { "data-testid": "pace-live", disabled: !behind, onclick: set(() => { p.shown = n; }) }, "Live"),
    ),
  );
}
