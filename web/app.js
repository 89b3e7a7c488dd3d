// Horcrux Hunt in the browser: the lobby, both seats, spectators and the replay, on the
// public HTTP API only (docs/API.md, docs/WEB.md). No framework, no build step.
// Safety: every element is built with createElement + text nodes (no HTML is parsed), so a
// server string (a name, a brain, a message) is always text; seat tokens live in
// localStorage, are sent only in the Authorization header and never appear in a URL.

const SEATS_KEY = "horcrux.seats.v1";
const NAME_KEY = "horcrux.name.v1";
// set once the player has dismissed the first-game guide: it is not shown again
const GUIDE_KEY = "horcrux.guide.v1";
// the browser's stable player key (the API's `player_key`): the same player id across games,
// so cross-game memory of this person builds up; a secret like the tokens, never in a URL
const PLAYER_KEY = "horcrux.player_key";
const playerKey = () => localStorage.getItem(PLAYER_KEY) || null;
function keepPlayerKey(data) {
  if (!playerKey() && data && typeof data.player_key === "string") localStorage.setItem(PLAYER_KEY, data.player_key);
}
const POLL_MS = [250, 500, 1000, 1000, 1000, 2000, 4000, 8000]; // by idle polls, then 8 s
const LOBBY_POLL_MS = [5000, 5000, 10000];
// the pace of an AI-vs-AI game for a spectator, and of the replay's play: one turn a second
const PACE_MS = 1000;
const metrics = (window.horcruxMetrics = { moves: [] });
// this tab's part of an Idempotency-Key: a double click here replays, another tab is its own
const TAB = Math.random().toString(36).slice(2, 10);

let API = window.location.origin;
let brains = null;
// the players' words (words.json, shared with the terminal client): levels, brains, guide...
let WORDS = { levels: { harry: [], voldemort: [] }, brains: { harry: {}, voldemort: {} }, guide: { harry: [], voldemort: [] }, wasted: {} };
let current = null; // the screen on show: {kind, id, timer, ...}

// ------------------------------------------------------------------ DOM helpers
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "heat") el.style.setProperty("--heat", String(value));
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : String(kid));
  }
  return el;
}
const svg = (tag, attrs) => {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  return el;
};
const root = () => document.getElementById("app");
function show(...nodes) {
  root().replaceChildren(...nodes);
}
function message(text, kind = "error") {
  const box = document.querySelector("[data-testid=message]");
  if (!box) return;
  box.className = `msg ${text ? kind : ""}`;
  box.textContent = text || "";
}
// a button that asks before it acts: a click shows the question with Yes and No in its
// place (in the page: a browser dialog would block it); Yes is `${testid}-confirm`
function confirmButton(label, question, yes, onYes, testid, cls = "danger") {
  const holder = h("span", { class: "confirm" });
  const ask = () =>
    holder.replaceChildren(
      h("span", { class: "question", "data-testid": `${testid}-question` }, question),
      h("button", { class: cls, "data-testid": `${testid}-confirm`, onclick: onYes }, yes),
      h("button", { "data-testid": `${testid}-cancel`, onclick: () => holder.replaceChildren(button) }, "No"),
    );
  const button = h("button", { class: cls, "data-testid": testid, onclick: ask }, label);
  holder.append(button);
  return holder;
}
const messageBox = () => h("div", { class: "msg", "data-testid": "message", role: "status" });

// ------------------------------------------------------------------ names of things
const SPECIAL = { "godrics-hollow": "Godric's Hollow", "spinners-end": "Spinner's End" };
const place = (slug) =>
  SPECIAL[slug] ||
  String(slug)
    .split("-")
    .map((w) => (w === "of" ? w : w.charAt(0).toUpperCase() + w.slice(1)))
    .join(" ");
const seatName = (s) => (s === "harry" ? "Harry" : s === "voldemort" ? "Voldemort" : "spectator");
const cap = (s) => String(s).charAt(0).toUpperCase() + String(s).slice(1);
function ago(epoch) {
  const s = Math.max(0, Date.now() / 1000 - Number(epoch));
  if (s < 60) return `${Math.round(s)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  return `${Math.round(s / 3600)} h ago`;
}
function who(game, seat) {
  const info = game.seats[seat];
  if (!info) return "?";
  if (info.kind === "ai") {
    const level = levelOf(seat, info.brain);
    return level ? `AI (${level.label})` : `AI (${String(info.brain).split(":")[0]})`;
  }
  if (!info.taken) return "free seat";
  return info.name ? info.name : "a player";
}
function describeAction(a) {
  if (!a) return "";
  switch (a.type) {
    case "search": return `searched ${place(a.location)}`;
    case "attack": return `attacked ${place(a.location)}`;
    case "ally": return `sent ${cap(a.ally)} to ${a.locations.map(place).join(" and ")}`;
    case "relocate": return `moved a Horcrux from ${place(a.from_location)} to ${place(a.to_location)}`;
    case "plant_decoy": return `planted a decoy at ${place(a.location)}`;
    case "pass": return "passed";
    default: return a.type;
  }
}
function resultOf(action, observations) {
  const one = observations.length === 1 ? observations[0] : null;
  const at = action && (action.location || (action.locations && action.locations.length === 1 && action.locations[0]));
  if (one && at === one.location) return `${one.outcome}${one.sensor === "hermione" ? " (Hermione)" : ""}`;
  return observations.map(describeObs).join("; ");
}
const describeObs = (o) =>
  o.kind === "search"
    ? `${place(o.location)}: ${o.outcome}${o.sensor === "hermione" ? " (Hermione)" : ""}`
    : `${place(o.location)}: ${o.outcome}`;

// ------------------------------------------------------------------ the API
class ApiError extends Error {
  constructor(status, code, text, data) {
    super(text);
    this.status = status;
    this.code = code;
    this.data = data;
  }
}
async function api(method, path, { token, body, headers } = {}) {
  const sent = { ...(headers || {}) };
  if (token) sent.authorization = `Bearer ${token}`;
  if (body !== undefined) sent["content-type"] = "application/json";
  let response;
  try {
    response = await fetch(API + path, {
      method,
      headers: sent,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
    });
  } catch (err) {
    throw new ApiError(0, "network", `cannot reach the server (${err.message}); retrying`);
  }
  const etag = response.headers.get("etag");
  if (response.status === 304) return { status: 304, etag, data: null };
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const code = (data && data.error) || `http_${response.status}`;
    const msg = (data && data.message) || `the server answered HTTP ${response.status}`;
    throw new ApiError(response.status, code, msg, data);
  }
  return { status: response.status, etag, data };
}
async function loadConfig() {
  try {
    const r = await fetch("config.json", { cache: "no-cache" });
    if (!r.ok) return;
    const c = await r.json();
    if (c && typeof c.apiUrl === "string" && /^https?:\/\/[^\s]+$/.test(c.apiUrl)) {
      API = c.apiUrl.replace(/\/+$/, "");
    }
  } catch {
    /* no config: the API is this page's origin */
  }
}
async function loadWords() {
  const meta = document.querySelector("meta[name=horcrux-words]");
  try {
    const r = await fetch(meta ? meta.getAttribute("content") : "words.json");
    if (r.ok) WORDS = await r.json();
  } catch {
    /* the page still works, with fewer words */
  }
}
// `{name}` placeholders filled from `vars` (the terminal fills the same texts)
const fill = (text, vars) => String(text || "").replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));
const plural = (n, one, many) => `${n} ${n === 1 ? one : many || `${one}s`}`;
const pct = (x) => `${Math.round(x * 100)}%`;
// a level of an AI opponent by its brain spec (the level's name, its sentence), else null
function levelOf(seat, brain) {
  const base = String(brain || "").split(":")[0];
  return (WORDS.levels[seat] || []).find((l) => l.brain === base) || null;
}
const levelSays = (level) => fill(level.sentence, { wins: Math.round(level.harry_wins * 100) });
const brainSays = (seat, brain) => (WORDS.brains[seat] || {})[String(brain || "").split(":")[0]] || "";
async function loadBrains() {
  if (brains) return brains;
  try {
    brains = (await api("GET", "/brains")).data;
  } catch {
    brains = {
      harry: [{ name: "planner", description: "", default: true }],
      voldemort: [{ name: "reference", description: "", default: true }],
    };
  }
  return brains;
}

// ------------------------------------------------------------------ seats held (localStorage)
function heldSeats() {
  try {
    const value = JSON.parse(localStorage.getItem(SEATS_KEY) || "{}");
    return value && typeof value === "object" ? value : {};
  } catch {
    return {};
  }
}
function holdSeat(gameId, seat, token, name, invite) {
  const all = heldSeats();
  all[gameId] = { seat, token, name: name || null, since: Date.now(), ...(invite ? { invite } : {}) };
  localStorage.setItem(SEATS_KEY, JSON.stringify(all));
}
function markOver(gameId) {
  // a held game seen finished: "Your games" offers its replay, not Resume
  const all = heldSeats();
  if (!all[gameId] || all[gameId].over) return;
  all[gameId].over = true;
  localStorage.setItem(SEATS_KEY, JSON.stringify(all));
}
function leaveSeat(gameId) {
  const all = heldSeats();
  delete all[gameId];
  localStorage.setItem(SEATS_KEY, JSON.stringify(all));
}
const playerName = () => localStorage.getItem(NAME_KEY) || "";

// ------------------------------------------------------------------ routing (#/..., no secrets)
function stop() {
  if (current && current.timer) clearTimeout(current.timer);
  if (current && current.paceTimer) clearTimeout(current.paceTimer);
  current = null;
}
function route() {
  stop();
  const [, kind, id] = (window.location.hash || "#/").split("/");
  if (kind === "game" && id) return gameScreen(decodeURIComponent(id));
  if (kind === "replay" && id) return replayScreen(decodeURIComponent(id));
  if (kind === "invite" && id) return inviteScreen(decodeURIComponent(id), decodeURIComponent((window.location.hash.split("/")[3] || "")));
  return lobbyScreen();
}
const go = (hash) => {
  if (window.location.hash === hash) route();
  else window.location.hash = hash;
};

// ------------------------------------------------------------------ the lobby
function brainSelect(seat, testid) {
  const list = (brains && brains[seat]) || [];
  // the name only (a sentence would widen the form past a phone's width); the chosen one's
  // sentence is said under the list, in players' words
  return h(
    "select",
    { name: `${seat}-brain`, "data-testid": testid, "aria-label": `${seatName(seat)} AI brain` },
    list.map((b) => h("option", { value: b.name, selected: b.default, title: brainSays(seat, b.name) || null }, b.name)),
  );
}
// a select's explanation line, kept in step with its choice
function explained(select, say, testid) {
  const line = h("p", { class: "muted says", "data-testid": testid });
  const update = () => {
    line.textContent = say(select.value);
  };
  select.addEventListener("change", update);
  update();
  return line;
}

// the levels of the AI opponents, weakest first, from words.json: each one's label and
// sentence come with its measured strength (the evaluation's win rate of the AI Harry);
// only the brains the server offers are listed (the rest: "any brain", advanced)
function namedSelect(seat, testid) {
  const list = (brains && brains[seat]) || [];
  const known = new Map(list.map((b) => [b.name, b]));
  const offered = (WORDS.levels[seat] || []).filter((l) => known.has(l.brain));
  const fallback = list.find((b) => b.default) || list[0];
  const preferred = offered.find((l) => known.get(l.brain).default) || offered[0];
  const options = offered.length ? offered : fallback ? [{ label: "Standard", brain: fallback.name, sentence: brainSays(seat, fallback.name), harry_wins: null }] : [];
  return h(
    "select",
    { name: `${seat}-level`, "data-testid": testid, "aria-label": `${seatName(seat)}: the AI opponent` },
    options.map((l) =>
      h("option", { value: l.brain, selected: preferred && l.brain === preferred.brain, "data-harry-wins": l.harry_wins === null ? null : String(l.harry_wins) }, l.label),
    ),
  );
}

const OPPONENT_LISTED = "another person (they join from the lobby)";
const OPPONENT_INVITED = "another person (you send them an invite link)";
async function lobbyScreen() {
  const screen = (current = { kind: "lobby", timer: null, idle: 0 });
  await loadBrains();
  if (current !== screen) return;
  const nameInput = h("input", {
    "data-testid": "player-name",
    name: "name",
    value: playerName(),
    placeholder: "optional, 1-32 characters",
    autocomplete: "nickname",
  });
  nameInput.addEventListener("change", () => localStorage.setItem(NAME_KEY, nameInput.value));
  const mySeat = h(
    "select",
    { name: "seat", "data-testid": "my-seat" },
    h("option", { value: "harry" }, "Harry (the hunter)"),
    h("option", { value: "voldemort" }, "Voldemort (the hider)"),
    h("option", { value: "none" }, "nobody: watch AI vs AI"),
  );
  const opponent = h(
    "select",
    { name: "opponent", "data-testid": "opponent" },
    h("option", { value: "ai" }, "the AI"),
    h("option", { value: "human" }, OPPONENT_LISTED),
  );
  const rules = h(
    "select",
    { name: "rules", "data-testid": "rules" },
    h("option", { value: "standard" }, "standard (with Ron, Hermione and Dumbledore)"),
    h("option", { value: "classic" }, "classic (no allies)"),
  );
  const privateBox = h("input", { type: "checkbox", name: "private", "data-testid": "private" });
  const privateRow = h("label", {}, h("span", {}, "Private"), privateBox, " not listed: you send an invite link");
  const harryBrain = brainSelect("harry", "harry-brain");
  const voldemortBrain = brainSelect("voldemort", "voldemort-brain");
  const seed = h("input", { name: "seed", "data-testid": "seed", inputmode: "numeric", placeholder: "random" });
  const harryLevel = namedSelect("harry", "harry-level");
  const voldemortLevel = namedSelect("voldemort", "voldemort-level");
  const advanced = h(
    "details",
    { "data-testid": "advanced" },
    h("summary", { class: "muted" }, "Advanced: any AI"),
    h("p", { class: "muted" }, "When open, these choose the AI instead of the level above. Each one is explained under its list."),
  );
  const levelLine = (seat, select) => explained(select, (brain) => {
    const level = levelOf(seat, brain);
    return level ? levelSays(level) : brainSays(seat, brain);
  }, `${seat}-level-says`);
  const harryRow = h("div", {}, h("label", {}, h("span", {}, "AI Harry"), harryLevel), levelLine("harry", harryLevel));
  const voldemortRow = h("div", {}, h("label", {}, h("span", {}, "AI Voldemort"), voldemortLevel), levelLine("voldemort", voldemortLevel));
  const harryAny = h("div", {}, h("label", {}, h("span", {}, "any Harry"), harryBrain), explained(harryBrain, (b) => brainSays("harry", b), "harry-brain-says"));
  const voldemortAny = h("div", {}, h("label", {}, h("span", {}, "any Voldemort"), voldemortBrain), explained(voldemortBrain, (b) => brainSays("voldemort", b), "voldemort-brain-says"));
  advanced.append(harryAny, voldemortAny);
  const sync = () => {
    const me = mySeat.value;
    opponent.disabled = me === "none";
    if (me === "voldemort" && opponent.value === "human") opponent.value = "ai";
    opponent.options[1].disabled = me === "voldemort"; // the creator of a 2-player game is Harry
    const ai = opponent.value === "ai" || me === "none";
    harryRow.hidden = harryAny.hidden = !(me === "none" || (me === "voldemort" && ai));
    voldemortRow.hidden = voldemortAny.hidden = !(me === "none" || (me === "harry" && ai));
    advanced.hidden = harryRow.hidden && voldemortRow.hidden;
    privateRow.hidden = !(me !== "none" && opponent.value === "human");
    if (privateRow.hidden) privateBox.checked = false;
    opponent.options[1].textContent = privateBox.checked ? OPPONENT_INVITED : OPPONENT_LISTED;
  };
  mySeat.addEventListener("change", sync);
  privateBox.addEventListener("change", sync);
  opponent.addEventListener("change", sync);
  sync();
  const form = h(
    "form",
    { "data-testid": "new-game-form" },
    h("label", {}, h("span", {}, "You play"), mySeat),
    h("label", {}, h("span", {}, "Against"), opponent),
    privateRow,
    harryRow,
    voldemortRow,
    advanced,
    h("label", {}, h("span", {}, "Rules"), rules),
    h("label", {}, h("span", {}, "Seed"), seed),
    h("div", { class: "row" }, h("button", { class: "primary", type: "submit", "data-testid": "new-game" }, "Start a new game")),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    localStorage.setItem(NAME_KEY, nameInput.value);
    const me = mySeat.value;
    const seat = (s) => {
      if (me === s) return withName({ kind: "human" }, nameInput.value);
      if (me !== "none" && opponent.value === "human") return { kind: "human" };
      const chosen = advanced.open ? (s === "harry" ? harryBrain : voldemortBrain) : s === "harry" ? harryLevel : voldemortLevel;
      return { kind: "ai", brain: chosen.value };
    };
    const body = { seats: { harry: seat("harry"), voldemort: seat("voldemort") }, rules: rules.value };
    if (privateBox.checked) body.private = true;
    if (seed.value.trim() !== "") {
      if (!/^\d{1,19}$/.test(seed.value.trim())) return message("The seed must be a whole number (0 or more), or empty for a random one.");
      body.seed = Number(seed.value.trim());
    }
    await createGame(body, nameInput.value);
  });

  const mine = h("tbody", {});
  const open = h("tbody", {});
  const active = h("tbody", {});
  const over = h("tbody", {});
  show(
    h(
      "section",
      { "data-testid": "lobby", class: "lobby" },
      messageBox(),
      h(
        "div",
        { class: "grid2" },
        h(
          "div",
          {},
          h("div", { class: "panel" }, h("h2", {}, "New game"), h("label", {}, h("span", {}, "Your name"), nameInput), form),
          h("div", { class: "panel" }, h("h2", {}, "Your games"), h("table", {}, mine)),
          memoryPanel(screen),
          h(
            "div",
            { class: "panel" },
            h("h2", {}, "How to play"),
            h(
              "ul",
              { class: "howto" },
              h("li", {}, "Harry has 50 turns and 7 attacks to destroy Voldemort's 3 Horcruxes, hidden among 15 locations."),
              h("li", {}, "Search a location (S): a positive is likely (80%) where something is hidden, but false alarms happen (15%)."),
              h("li", {}, "Attack (A) where the evidence piles up. Allies: Ron searches two places, Hermione searches sharper, Dumbledore reveals the truth of one place."),
              h("li", {}, "Voldemort sees everything: he may move a Horcrux (3 times) or plant a decoy (3 times) after Harry's move."),
            ),
          ),
        ),
        h(
          "div",
          {},
          h(
            "div",
            { class: "panel" },
            h("h2", {}, "Open games: join a free seat"),
            h("table", { "data-testid": "open-games" }, h("thead", {}, h("tr", {}, h("th", {}, "game"), h("th", {}, "rules"), h("th", {}, "players"), h("th", {}, "created"), h("th", {}, ""))), open),
          ),
          h("div", { class: "panel" }, h("h2", {}, "Being played: watch"), h("table", { "data-testid": "active-games" }, listHead(), active)),
          h("div", { class: "panel" }, h("h2", {}, "Finished: replays"), h("table", { "data-testid": "over-games" }, listHead(), over)),
        ),
      ),
    ),
  );
  const held = Object.entries(heldSeats());
  if (!held.length) mine.append(h("tr", {}, h("td", { class: "muted" }, "None yet. Start one, or join an open game.")));
  for (const [gameId, rec] of held) {
    mine.append(
      h(
        "tr",
        { "data-testid": "my-game" },
        h("td", {}, h("code", {}, gameId)),
        h("td", {}, `${seatName(rec.seat)}${rec.name ? ` as ${rec.name}` : ""}${rec.over ? " · finished" : ""}`),
        h(
          "td",
          { class: "row" },
          rec.over
            ? h("button", { "data-testid": "my-replay", onclick: () => go(`#/replay/${encodeURIComponent(gameId)}`) }, "Replay")
            : h("button", { "data-testid": "resume", onclick: () => go(`#/game/${encodeURIComponent(gameId)}`) }, "Resume"),
          confirmButton("Leave", "Leave this game? This browser forgets its seat; nobody can play it from here again.", "Yes, leave", () => { leaveSeat(gameId); route(); }, "leave"),
        ),
      ),
    );
  }
  const refresh = async () => {
    if (current !== screen) return;
    try {
      const [o, a, v] = await Promise.all(
        ["open", "active", "over"].map((s) => api("GET", `/games?status=${s}&limit=20`)),
      );
      await learnSeats([...a.data.games, ...v.data.games.slice(-10)]);
      if (current !== screen) return;
      fillOpen(open, o.data.games, nameInput);
      fillList(active, a.data.games, "Watch", (id) => `#/game/${encodeURIComponent(id)}`, "No game is being played.");
      const ended = v.data.games.filter((g) => heldSeats()[g.game_id] && !heldSeats()[g.game_id].over);
      if (ended.length) {
        for (const g of ended) markOver(g.game_id);
        return route(); // "Your games" again, with a Replay for the finished ones
      }
      fillList(over, v.data.games.slice(-10).reverse(), "Replay", (id) => `#/replay/${encodeURIComponent(id)}`, "No finished game yet.");
      screen.idle = 0;
    } catch (err) {
      screen.idle += 1;
      message(`The lobby could not be read: ${err.message}`);
    }
    const wait = LOBBY_POLL_MS[Math.min(screen.idle, LOBBY_POLL_MS.length - 1)];
    if (current === screen) screen.timer = setTimeout(refresh, document.hidden ? 10000 : wait);
  };
  refresh();
}

// ------------------------------------------------------------------ your memory
// What the AI remembers about this browser's player (`GET /players/me/memory` with the
// player key, never in a URL), in the AI's own sentences, and Forget (`DELETE`), asked first.
const LOCATION_SLUG = /\b[a-z]+(?:-[a-z]+)+\b/g;
function memoryWords(item) {
  if (item.subject === "style") return "A summary of how you tend to play, fitted over your games.";
  return item.text.replace(/player:[0-9a-f]{16}/g, "you").replace(LOCATION_SLUG, (slug) => place(slug));
}
function memoryPanel(screen) {
  const box = h("div", { class: "panel", "data-testid": "my-memory" }, h("h2", {}, "What the AI remembers about you"));
  const body = h("div", {}, h("p", { class: "muted" }, "Reading…"));
  box.append(body);
  const key = playerKey();
  if (!key) {
    body.replaceChildren(h("p", { class: "muted", "data-testid": "memory-none" }, "Nothing: this browser has not played yet. The AI Harry learns how you hide the Horcruxes when you play Voldemort against it."));
    return box;
  }
  const fillIn = async (said) => {
    let data;
    try {
      data = (await api("GET", "/players/me/memory", { token: key })).data;
    } catch (err) {
      body.replaceChildren(h("p", { class: "muted" }, `Your memory could not be read (${err.code}): ${err.message}`));
      return;
    }
    if (current !== screen) return;
    const kept = data.scopes.filter((sc) => sc.items.length);
    const parts = [];
    if (said) parts.push(h("p", { class: "msg info", "data-testid": "memory-said" }, said));
    if (!kept.length) {
      parts.push(h("p", { class: "muted", "data-testid": "memory-none" }, "Nothing about you yet. The AI Harry learns how you hide the Horcruxes when you play Voldemort against it; each game after that starts from what it learned."));
    }
    for (const sc of kept) {
      const level = levelOf("harry", sc.agent);
      parts.push(
        h("h3", {}, `${level ? `The ${level.label} AI Harry` : "An AI Harry"}, after ${plural(sc.games, "game")} against you`),
        h("ul", { class: "log plain", "data-testid": "memory-items" }, sc.items.map((it) => h("li", {}, memoryWords(it)))),
      );
    }
    if (kept.length) {
      parts.push(
        h(
          "div",
          { class: "row" },
          confirmButton("Forget me", "Forget all of this? Your next game starts as if the AI had never met you.", "Yes, forget", async () => {
            try {
              await api("DELETE", "/players/me/memory", { token: key });
              fillIn("Forgotten: the AI remembers nothing about you now.");
            } catch (err) {
              body.prepend(h("p", { class: "msg error" }, `Nothing was forgotten (${err.code}): ${err.message}`));
            }
          }, "forget-me"),
        ),
      );
    }
    body.replaceChildren(...parts);
  };
  fillIn(null);
  return box;
}

function withName(seat, name) {
  // the creator's own seat: their name, if any, and their player key, if they have one
  const trimmed = String(name || "").trim();
  const key = playerKey();
  return { ...seat, ...(trimmed ? { name: trimmed } : {}), ...(key ? { player_key: key } : {}) };
}

function fillOpen(tbody, games, nameInput) {
  tbody.replaceChildren();
  if (!games.length) tbody.append(h("tr", {}, h("td", { class: "muted", colspan: 5 }, "No open game. Start one!")));
  for (const g of games) {
    const names = g.names || {};
    const seated = Object.entries(names).map(([s, n]) => `${n} (${seatName(s)})`).join(", ");
    tbody.append(
      h(
        "tr",
        { "data-testid": "open-game", "data-game": g.game_id },
        h("td", {}, h("code", {}, g.game_id.slice(0, 8))),
        h("td", {}, g.rules),
        h("td", {}, seated || "waiting", h("br"), h("span", { class: "muted" }, `free: ${g.open_seats.map(seatName).join(", ")}`)),
        h("td", {}, ago(g.created_at)),
        h(
          "td",
          { class: "row" },
          g.open_seats.map((s) =>
            h("button", { "data-testid": `join-${s}`, onclick: () => joinGame(g.game_id, s, nameInput.value) }, `Join as ${seatName(s)}`),
          ),
        ),
      ),
    );
  }
}
const listHead = () => h("thead", {}, h("tr", {}, h("th", {}, "game"), h("th", {}, "rules"), h("th", {}, "players"), h("th", {}, "created"), h("th", {}, "")));
// the players of a listed game: a person's name (the list's `names`), else who holds the
// seat as the game itself says (read once per game: a seat's kind never changes)
const seatsSeen = new Map();
function players(g) {
  const names = g.names || {};
  const seats = seatsSeen.get(g.game_id);
  const one = (s) => {
    if (names[s]) return names[s];
    if (!seats || !seats[s]) return "…";
    if (seats[s].kind === "ai") return who({ seats }, s);
    return seats[s].taken ? "a player with no name" : "free seat";
  };
  return ["harry", "voldemort"].map((s) => `${seatName(s)}: ${one(s)}`).join(", ");
}
async function learnSeats(games) {
  const unknown = games.filter((g) => !seatsSeen.has(g.game_id) && !(g.names && g.names.harry && g.names.voldemort));
  await Promise.all(
    unknown.map(async (g) => {
      try {
        seatsSeen.set(g.game_id, (await api("GET", `/games/${encodeURIComponent(g.game_id)}`)).data.seats);
      } catch {
        /* said as "…" until the next refresh */
      }
    }),
  );
}
function fillList(tbody, games, label, href, empty) {
  tbody.replaceChildren();
  if (!games.length) tbody.append(h("tr", {}, h("td", { class: "muted", colspan: 5 }, empty)));
  for (const g of games) {
    tbody.append(
      h(
        "tr",
        { "data-testid": "listed-game", "data-game": g.game_id },
        h("td", {}, h("code", {}, g.game_id.slice(0, 8))),
        h("td", {}, g.rules),
        h("td", {}, players(g)),
        h("td", {}, ago(g.created_at)),
        h("td", {}, h("button", { onclick: () => go(href(g.game_id)) }, label)),
      ),
    );
  }
}

async function createGame(body, name) {
  message("");
  try {
    const r = await api("POST", "/games", { body });
    keepPlayerKey(r.data);
    if (r.data.token) holdSeat(r.data.game_id, r.data.seat, r.data.token, String(name || "").trim(), r.data.invite);
    go(`#/game/${encodeURIComponent(r.data.game_id)}`);
  } catch (err) {
    message(`The game was not created: ${err.message}`);
  }
}
async function joinGame(gameId, seat, name, invite) {
  message("");
  localStorage.setItem(NAME_KEY, name || "");
  const trimmed = String(name || "").trim();
  try {
    const body = { ...(trimmed ? { name: trimmed } : {}), ...(playerKey() ? { player_key: playerKey() } : {}) };
    // a private game's code goes to the API as it asks (`?invite=`), never in the page's URL
    const query = invite ? `?invite=${encodeURIComponent(invite)}` : "";
    const r = await api("POST", `/games/${encodeURIComponent(gameId)}/seats/${seat}${query}`, Object.keys(body).length ? { body } : {});
    keepPlayerKey(r.data);
    holdSeat(gameId, seat, r.data.token, trimmed);
    // replace, not push: the invite link (its code) does not stay in this tab's history
    window.location.replace(`#/game/${encodeURIComponent(gameId)}`);
  } catch (err) {
    message(`You did not join: ${err.message}`);
  }
}

// ------------------------------------------------------------------ evidence (Harry's own)
// Each location's odds from Harry's public evidence alone (independent locations, Bayes on
// the sensors of the rules; an attack or a reveal settles a location). An approximation,
// labelled as such: the AI planner also prices in Voldemort's relocations.
function evidence(rules, history, horcruxesLeft) {
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
function unsure(entropy, rules) {
  const most = Math.log2(rules.locations.length);
  const share = Math.max(0, Math.min(1, entropy / most));
  const word = share < 0.25 ? "nearly sure" : share < 0.5 ? "fairly sure" : share < 0.8 ? "unsure" : "with almost no idea";
  return `${word} (${Math.round(share * 100)}% of the most uncertainty there can be)`;
}
function entropyBits(p) {
  const total = Object.values(p).reduce((a, b) => a + b, 0);
  if (total <= 0) return 0;
  let e = 0;
  for (const v of Object.values(p)) if (v > 0) e -= (v / total) * Math.log2(v / total);
  return e;
}

// ------------------------------------------------------------------ a game (a seat or a spectator)
async function gameScreen(gameId) {
  const held = heldSeats()[gameId];
  const screen = (current = {
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

async function refreshGame(screen, first) {
  if (current !== screen) return;
  try {
    const headers = screen.etag ? { "if-none-match": screen.etag } : {};
    const r = await api("GET", `/games/${encodeURIComponent(screen.id)}`, { token: screen.token, headers });
    if (current !== screen) return;
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
    if (current !== screen) return;
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
function schedule(screen) {
  if (current !== screen) return;
  clearTimeout(screen.timer);
  const g = screen.game;
  if (g && g.status === "over") return;
  let wait = POLL_MS[Math.min(screen.idle, POLL_MS.length - 1)];
  if (g && g.status === "active" && g.to_move === g.your_seat) wait = 10000; // only I can move
  if (document.hidden) wait = Math.max(wait, 10000);
  screen.timer = setTimeout(() => refreshGame(screen, false), wait);
}

function renderStale(screen, err) {
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

function renderGame(screen) {
  const g = screen.game;
  const v = g.view;
  const mine = g.your_seat;
  const myTurn = g.status === "active" && mine && g.to_move === mine && g.legal;
  // a two-person game: while the other seat moves, the page says whom it waits for
  const other = g.status === "active" && mine && g.to_move !== mine && g.seats[g.to_move] && g.seats[g.to_move].kind === "human";
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
function guidePanel(screen) {
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
  const lines = (WORDS.guide[seat] || []).map((text, i) => h("li", { "data-testid": ids[i] }, fill(text, vars)));
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
const inviteLink = (gameId, code) => `${window.location.origin}${window.location.pathname}#/invite/${encodeURIComponent(gameId)}/${encodeURIComponent(code)}`;
function invitePanel(screen, code) {
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
async function inviteScreen(gameId, code) {
  const screen = (current = { kind: "invite", id: gameId, timer: null });
  show(h("section", { "data-testid": "invited" }, messageBox(), h("p", { class: "muted" }, "Reading the game…")));
  let g;
  try {
    g = (await api("GET", `/games/${encodeURIComponent(gameId)}`)).data;
  } catch (err) {
    if (current !== screen) return;
    show(h("section", { "data-testid": "invited" }, messageBox(), h("div", { class: "row" }, h("button", { "data-testid": "back-to-lobby", onclick: () => go("#/") }, "Back to the lobby"))));
    return message(`This invite leads nowhere (${err.code}): ${err.message}`);
  }
  if (current !== screen) return;
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
function pacedFor(screen, g) {
  return !screen.token && !g.your_seat && ["harry", "voldemort"].every((s) => g.seats[s] && g.seats[s].kind === "ai");
}
const pacedBehind = (screen) => Boolean(screen.pace && screen.live && screen.pace.shown < screen.live.view.history.length);
function startPace(screen) {
  screen.pace = { shown: 0, playing: true };
  const tick = () => {
    if (current !== screen) return;
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
function pacedView(screen) {
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
function pacePanel(screen) {
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

function controls(screen) {
  const g = screen.game;
  const legal = g.legal;
  const bar = h("div", { class: "actions", "data-testid": "actions" });
  const add = (action, label, key, enabled) =>
    bar.append(
      h(
        "button",
        {
          class: screen.action === action ? "on" : "",
          "data-testid": `action-${action}`,
          disabled: !enabled || screen.busy,
          onclick: () => choose(screen, action),
        },
        label,
        h("kbd", {}, key),
      ),
    );
  if (g.your_seat === "harry") {
    add("search", "Search", "S", legal.types.includes("search"));
    add("attack", `Attack (${g.view.attacks_left} left)`, "A", legal.attack);
    for (const [ally, key] of [["ron", "R"], ["hermione", "H"], ["dumbledore", "D"]]) {
      if (ally in g.view.allies) add(ally, cap(ally), key, ally in legal.allies);
    }
  } else {
    add("relocate", "Move a Horcrux", "M", legal.types.includes("relocate"));
    add("plant_decoy", "Plant a decoy", "D", legal.types.includes("plant_decoy"));
    add("pass", "Pass", "P", legal.types.includes("pass"));
  }
  const hint = screen.action
    ? hintFor(screen)
    : "Pick an action (button or key), then a location (click, or the arrow keys and Enter).";
  return h("div", { class: "panel" }, h("h3", {}, "Your move"), bar, h("p", { class: "muted", "data-testid": "hint" }, hint));
}
function hintFor(screen) {
  const a = screen.action;
  if (a === "ron") return screen.picks.length ? "Ron: pick the second location." : "Ron: pick two different locations.";
  if (a === "relocate") return screen.picks.length ? `Move the Horcrux from ${place(screen.picks[0])} to: pick a free location.` : "Pick the Horcrux to move.";
  if (a === "plant_decoy") return "Pick a free location for the decoy.";
  return `${cap(a)}: pick a location. Esc cancels.`;
}
function targets(screen) {
  const legal = screen.game.legal;
  const a = screen.action;
  if (!legal || !a) return [];
  if (a === "relocate") return screen.picks.length ? legal.relocate_to : legal.relocate_from;
  if (a === "plant_decoy") return legal.decoy_at;
  if (a === "ron") return legal.locations.filter((l) => !screen.picks.includes(l));
  return legal.locations;
}
function choose(screen, action) {
  if (screen.busy) return;
  screen.keyboard = false; // a click: no keyboard cursor until a key moves it
  screen.action = screen.action === action ? null : action;
  screen.picks = [];
  screen.note = null;
  if (action === "pass" && screen.action) return play(screen, { type: "pass" });
  renderGame(screen);
}
function pick(screen, loc) {
  const a = screen.action;
  if (!a || screen.busy || !targets(screen).includes(loc)) return;
  if (a === "search" || a === "attack") return play(screen, { type: a, location: loc });
  if (a === "hermione" || a === "dumbledore") return play(screen, { type: "ally", ally: a, locations: [loc] });
  if (a === "plant_decoy") return play(screen, { type: "plant_decoy", location: loc });
  if (a === "ron") {
    if (screen.picks.length === 0) {
      screen.picks = [loc];
      return renderGame(screen);
    }
    return play(screen, { type: "ally", ally: "ron", locations: [screen.picks[0], loc] });
  }
  if (a === "relocate") {
    if (screen.picks.length === 0) {
      screen.picks = [loc];
      return renderGame(screen);
    }
    return play(screen, { type: "relocate", from_location: screen.picks[0], to_location: loc });
  }
}

async function play(screen, action) {
  if (screen.busy || !screen.token) return; // one move in flight at most: a double click plays once
  const started = performance.now();
  const g = screen.game;
  screen.busy = true;
  const version = g.version;
  try {
    const r = await api("POST", `/games/${encodeURIComponent(screen.id)}/moves`, {
      token: screen.token,
      body: action,
      // the version this page last saw: a stale page (or a second click) cannot play a turn
      headers: { "if-match": `"${version}"`, "idempotency-key": `web-${TAB}-${g.your_seat}-v${version}` },
    });
    if (current !== screen) return;
    screen.game = r.data.game;
    screen.etag = r.etag;
    if (r.data.game.status === "over") markOver(screen.id);
    const ev = r.data.event;
    const result = ev && ev.observations && ev.observations.length ? `: ${resultOf(action, ev.observations)}` : "";
    const why = ev && ev.observations ? whyWasted(r.data.game.view.history, { turn: ev.turn ?? g.view.turn, observations: ev.observations }, voiceOf(g), g.view.rules) : null;
    screen.note = { text: `You ${describeAction(action)}${result}.${why ? ` ${why}` : ""}`, kind: "info" };
  } catch (err) {
    if (current !== screen) return;
    if (err.data && err.data.game) screen.game = err.data.game;
    screen.note = { text: `That move was not played (${err.code}): ${err.message}`, kind: "error" };
    if (err.code === "precondition_failed" || err.code === "conflict") screen.etag = null;
  } finally {
    screen.busy = false;
    screen.action = null;
    screen.picks = [];
  }
  screen.idle = 0;
  renderGame(screen);
  requestAnimationFrame(() => metrics.moves.push(performance.now() - started));
  refreshSoon(screen); // the opponent's reply (or, after a refusal, the game as it is now)
}
function refreshSoon(screen) {
  clearTimeout(screen.timer);
  screen.timer = setTimeout(() => refreshGame(screen, false), POLL_MS[0]);
}

// The overlay: what an AI Harry (the server's default planner) believes on Harry's public
// evidence (`GET /games/{id}/belief`), fetched once per version of the game; until it
// arrives (or if it cannot be had) the page's own estimate stands in, and says so.
function aiBelief(screen) {
  const g = screen.game;
  const held = screen.aiBelief;
  if (held && held.version === g.version) return held;
  if (!screen.beliefLoading) {
    screen.beliefLoading = true;
    api("GET", `/games/${encodeURIComponent(screen.id)}/belief`, { token: screen.token })
      .then((r) => {
        screen.aiBelief = r.data;
        if (current === screen && screen.showBelief) renderGame(screen);
      })
      .catch(() => {
        screen.aiBelief = { version: g.version, occupancy: null };
      })
      .finally(() => {
        screen.beliefLoading = false;
      });
  }
  return null;
}

function renderBoard(screen, opts = {}) {
  const g = screen.game;
  const v = g.view;
  const locs = v.rules.locations;
  const tgt = new Set(targets(screen));
  const truthH = new Set(v.horcrux_locations || []);
  const truthD = new Set(v.decoy_locations || []);
  const own = evidence(v.rules, v.history, v.horcruxes_left);
  // the AI's map is of the game as it is now: not while a paced view shows an earlier turn
  const ai = screen.showBelief && !opts.heat && !pacedBehind(screen) ? aiBelief(screen) : null;
  const ev = ai && ai.occupancy ? { p: ai.occupancy } : own;
  screen.beliefSource = ai && ai.occupancy ? "ai" : "own";
  const last = v.history.length ? v.history[v.history.length - 1] : null;
  const lastLocs = new Set(last ? last.observations.map((o) => o.location) : []);
  const chips = Object.fromEntries(locs.map((l) => [l, []]));
  for (const rec of v.history) for (const o of rec.observations) chips[o.location].push([rec.turn, o]);
  if (screen.cursor >= locs.length) screen.cursor = 0;
  // a tile is a button only while a location is being picked (an action chosen on this
  // seat's turn); otherwise it is inert: a click out of turn shows nothing, not a focus ring
  const picking = Boolean(screen.action && g.legal && g.status === "active" && g.to_move === g.your_seat);
  const board = h("div", { class: `board ${picking ? "picking" : "idle"}`, "data-testid": "board", role: "grid" });
  locs.forEach((loc, i) => {
    const cls = ["tile"];
    if (tgt.has(loc)) cls.push("target");
    if (screen.picks.includes(loc)) cls.push("picked");
    // the keyboard cursor (blue outline) only when the keyboard drives the pick; the last
    // move's tiles get a gold bar, never an outline: two styles, never two outlines
    if (screen.action && screen.keyboard && i === screen.cursor) cls.push("cursor");
    if (truthH.has(loc)) cls.push("horcrux");
    if (truthD.has(loc)) cls.push("decoy");
    if (lastLocs.has(loc)) cls.push("last");
    board.append(
      h(
        picking ? "button" : "div",
        {
          class: cls.join(" "),
          "data-testid": `loc-${loc}`,
          "data-loc": loc,
          role: picking ? null : "gridcell",
          disabled: picking ? !tgt.has(loc) || screen.busy : false,
          heat: screen.showBelief || opts.heat ? ev.p[loc].toFixed(3) : 0,
          onclick: picking ? () => { screen.keyboard = false; pick(screen, loc); } : null,
          title: place(loc),
        },
        h("span", { class: "name" }, place(loc)),
        truthH.has(loc) || truthD.has(loc)
          ? h("span", { class: "marks" }, truthH.has(loc) ? h("span", { class: "h" }, "HORCRUX") : null, truthD.has(loc) ? h("span", { class: "d" }, "DECOY") : null)
          : null,
        h("span", { class: "chips" }, chips[loc].map(([t, o]) => chip(t, o))),
        screen.showBelief ? h("span", { class: "p" }, `${Math.round(ev.p[loc] * 100)}%`) : null,
      ),
    );
  });
  return board;
}
function chip(turn, o) {
  const sensor = o.sensor === "hermione" ? "H" : "";
  if (o.kind === "search") return h("span", { class: `chip ${o.outcome === "positive" ? "pos" : "neg"}`, title: `turn ${turn}: search ${o.outcome}` }, `${turn}${sensor}${o.outcome === "positive" ? "+" : "−"}`);
  if (o.kind === "attack") return h("span", { class: `chip ${o.outcome === "destroyed" ? "hit" : "miss"}`, title: `turn ${turn}: attack ${o.outcome}` }, `${turn}⚔${o.outcome === "destroyed" ? "✓" : o.outcome === "decoy" ? "decoy" : "∅"}`);
  return h("span", { class: "chip rev", title: `turn ${turn}: Dumbledore: ${o.outcome}` }, `${turn}★${o.outcome}`);
}

function harryPanel(screen) {
  const g = screen.game;
  const v = g.view;
  const allies = Object.entries(v.allies).map(([name, a]) =>
    h("dd", {}, `${cap(name)}: ${a.available ? "ready" : a.uses_left === 0 ? "used up" : `rests ${a.rest} more turn${a.rest === 1 ? "" : "s"}`}${a.uses_left === null || a.uses_left === undefined || a.uses_left === 0 ? "" : `, ${a.uses_left} use${a.uses_left === 1 ? "" : "s"} left`}`),
  );
  const toggle = h("button", { "data-testid": "belief-toggle", class: screen.showBelief ? "on" : "", onclick: () => { screen.showBelief = !screen.showBelief; renderGame(screen); } }, screen.showBelief ? "Hide the evidence map" : "Show the evidence map", h("kbd", {}, "B"));
  return h(
    "div",
    { class: "panel", "data-testid": "harry-panel" },
    h("h2", {}, "Harry's hunt"),
    h(
      "dl",
      { class: "stats" },
      h("dt", {}, "Attacks left"), h("dd", { "data-testid": "attacks-left" }, String(v.attacks_left)),
      h("dt", {}, "Horcruxes"), h("dd", { "data-testid": "destroyed" }, `${v.horcruxes_destroyed} destroyed, ${v.horcruxes_left} left`),
      allies.length ? [h("dt", {}, "Allies"), h("dd", { "data-testid": "allies" }, allies.map((a, i) => [i ? h("br") : null, a.textContent]))] : [],
    ),
    h("p", { class: "muted" }, "Chips: turn and result: + positive, − negative, ⚔ an attack, ★ Dumbledore; H: Hermione's search."),
    toggle,
    screen.showBelief
      ? h(
          "p",
          { class: "muted", "data-testid": "belief-source" },
          screen.beliefSource === "ai"
            ? "Shading: what the strongest AI Harry believes on your evidence: each location's chance of a real Horcrux, with Voldemort's relocations and decoys priced in."
            : "Shading: each location's chance by Bayes on Harry's own evidence (independent locations), until the AI Harry's map arrives.",
        )
      : null,
  );
}

function voldemortPanel(screen) {
  const v = screen.game.view;
  const last = v.history.length ? v.history[v.history.length - 1] : null;
  const ev = evidence(v.rules, v.history, v.horcruxes_left);
  const top = [...v.rules.locations].sort((a, b) => ev.score[b] - ev.score[a]).filter((l) => ev.score[l] > 0).slice(0, 3);
  return h(
    "div",
    { class: "panel", "data-testid": "voldemort-panel" },
    h("h2", {}, "Voldemort's secrets"),
    h(
      "dl",
      { class: "stats" },
      h("dt", {}, "Horcruxes"), h("dd", { "data-testid": "truth" }, v.horcrux_locations.map(place).join(", ") || "none left"),
      h("dt", {}, "Decoys"), h("dd", {}, v.decoy_locations.map(place).join(", ") || "none"),
      h("dt", {}, "Charges"), h("dd", { "data-testid": "charges" }, `${plural(v.relocations_left, "move")} of a Horcrux, ${plural(v.decoys_left, "decoy")} left`),
      h("dt", {}, "Harry's attacks"), h("dd", {}, `${v.attacks_left} left; ${plural(v.horcruxes_destroyed, "Horcrux", "Horcruxes")} destroyed`),
      h("dt", {}, "Harry's last move"), h("dd", { "data-testid": "last-harry" }, last ? `turn ${last.turn}: ${describeAction(last.action)}: ${resultOf(last.action, last.observations)}` : "none yet"),
      h("dt", {}, "His evidence points to"), h("dd", {}, top.length ? top.map(place).join(", ") : "nowhere yet"),
    ),
  );
}

// After an attack that destroyed nothing: one line on what it can mean, from Harry's own
// history before that turn (his positives there), never from anything he cannot see; said
// to the one who reads it (`voice`: harry, voldemort or spectator), in words.json's phrases
function whyWasted(history, rec, voice, rules) {
  const att = rec.observations.find((o) => o.kind === "attack");
  if (!att || att.outcome === "destroyed") return null;
  const at = att.location;
  const before = history.filter((r) => r.turn < rec.turn);
  const pos = [];
  for (const r of before) for (const o of r.observations) if (o.kind === "search" && o.location === at && o.outcome === "positive") pos.push(r.turn);
  const n = pos.length;
  const words = WORDS.wasted || {};
  const said = words[voice] || words.harry;
  if (!said) return null;
  const vars = {
    place: place(at),
    turn: n ? pos[n - 1] : "",
    f: rules && rules.sensor ? pct(rules.sensor.f) : "15%",
    positives: n ? fill(n === 1 ? words.positives : words.positives_many, { n }) : "",
  };
  if (att.outcome === "decoy") return fill(said.decoy, vars);
  return fill(n ? said.moved : said.unpointed, vars);
}
const voiceOf = (g) => (g.your_seat === "voldemort" ? "voldemort" : g.your_seat === "harry" ? "harry" : "spectator");

function logPanel(screen) {
  const v = screen.game.view;
  const voice = voiceOf(screen.game);
  const items = [...v.history].reverse().map((rec) => {
    const why = whyWasted(v.history, rec, voice, v.rules);
    return h(
      "li",
      {},
      h("b", { class: "turn" }, `Turn ${rec.turn}`),
      ` Harry ${describeAction(rec.action)}: ${resultOf(rec.action, rec.observations)}`,
      why ? h("span", { class: "why", "data-testid": "why-wasted" }, why) : null,
    );
  });
  // one label per item, the turn's (a numbered list would repeat it, and cut it past 9)
  return h("div", { class: "panel" }, h("h3", {}, "Harry's log"), items.length ? h("ul", { class: "log plain", "data-testid": "log" }, items) : h("p", { class: "muted" }, "No move yet."));
}

function endPanel(screen) {
  const g = screen.game;
  const won = g.your_seat && g.winner === g.your_seat;
  const lost = g.your_seat && g.winner && g.winner !== g.your_seat;
  const title = won ? "You won!" : lost ? "You lost." : `${seatName(g.winner)} wins.`;
  const truth = h("div", { "data-testid": "end-truth" }, h("p", { class: "muted" }, "Reading where everything really was…"));
  endTruth(screen, truth);
  return h(
    "div",
    { class: "panel end", "data-testid": "end" },
    h("h2", {}, title),
    h("p", {}, `${seatName(g.winner)} wins: ${g.end_reason || ""}.`),
    truth,
    h(
      "div",
      { class: "row" },
      h("button", { class: "primary", "data-testid": "open-replay", onclick: () => go(`#/replay/${encodeURIComponent(g.game_id)}`) }, "See the replay"),
      g.your_seat ? h("button", { "data-testid": "rematch", onclick: () => rematch(g) }, "Rematch") : null,
      h("button", { onclick: () => go("#/") }, "Lobby"),
    ),
  );
}
// where every Horcrux and decoy really was: the replay (released after the end), read once
async function endTruth(screen, box) {
  if (!screen.truth) {
    try {
      screen.truth = (await api("GET", `/games/${encodeURIComponent(screen.id)}/replay`)).data.replay;
    } catch (err) {
      box.replaceChildren(h("p", { class: "muted" }, `Where everything was could not be read (${err.code}): ${err.message}`));
      return;
    }
  }
  const steps = screen.truth.steps;
  const lines = [h("li", {}, h("b", { class: "turn" }, "Start"), ` Horcruxes at ${steps[0].horcruxes.map(place).join(", ")}`)];
  for (const st of steps) {
    if (st.actor === "voldemort" && st.action && st.action.type !== "pass") lines.push(h("li", {}, h("b", { class: "turn" }, `Turn ${st.turn}`), ` Voldemort ${describeAction(st.action)}`));
  }
  const last = steps[steps.length - 1];
  const left = last.horcruxes.length ? `${last.horcruxes.length === 1 ? "One Horcrux left, at" : "Horcruxes left at"} ${last.horcruxes.map(place).join(", ")}` : "No Horcrux left";
  const decoys = last.decoys.length ? `${last.decoys.length === 1 ? "a decoy at" : "decoys at"} ${last.decoys.map(place).join(", ")}` : "no decoy standing";
  lines.push(h("li", { "data-testid": "end-state" }, h("b", { class: "turn" }, "End"), ` ${left}; ${decoys}.`));
  box.replaceChildren(h("h3", {}, "Where everything really was"), h("ul", { class: "log plain" }, lines));
}
async function rematch(g) {
  const seat = (s) => {
    const info = g.seats[s];
    if (s === g.your_seat) return withName({ kind: "human" }, playerName());
    return info.kind === "ai" ? { kind: "ai", brain: info.brain } : { kind: "human" };
  };
  await createGame({ seats: { harry: seat("harry"), voldemort: seat("voldemort") }, rules: g.rules }, playerName());
}

// ------------------------------------------------------------------ keyboard
const KEYS = { s: "search", a: "attack", r: "ron", h: "hermione", d: "dumbledore" };
const VKEYS = { m: "relocate", d: "plant_decoy", p: "pass" };
document.addEventListener("keydown", (ev) => {
  if (ev.target instanceof HTMLInputElement || ev.target instanceof HTMLSelectElement || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const screen = current;
  if (!screen) return;
  if (screen.kind === "replay") return replayKey(screen, ev);
  if (screen.kind !== "game" || !screen.game) return;
  const g = screen.game;
  const key = ev.key.toLowerCase();
  if (key === "b" && g.your_seat !== "voldemort") {
    screen.showBelief = !screen.showBelief;
    return renderGame(screen);
  }
  if (!(g.status === "active" && g.to_move === g.your_seat && g.legal)) return;
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

// ------------------------------------------------------------------ the replay
async function replayScreen(gameId) {
  const screen = (current = { kind: "replay", id: gameId, timer: null, step: 0 });
  show(h("section", { "data-testid": "replay" }, messageBox(), h("p", { class: "muted" }, "Loading the replay…")));
  let data;
  try {
    data = (await api("GET", `/games/${encodeURIComponent(gameId)}/replay`)).data;
  } catch (err) {
    if (current !== screen) return;
    // an error page with a way on, never a permanent "Loading"
    const running = err.code === "not_over";
    const why = running
      ? "This game is still being played: its replay opens once it is over."
      : err.status === 404
        ? "There is no such game: it may have expired, or the link is wrong."
        : "The replay could not be read.";
    show(
      h(
        "section",
        { "data-testid": "replay-error" },
        messageBox(),
        h(
          "div",
          { class: "panel" },
          h("h2", {}, "No replay"),
          h("p", {}, why),
          h(
            "div",
            { class: "row" },
            h("button", { class: "primary", "data-testid": "back-to-lobby", onclick: () => go("#/") }, "Back to the lobby"),
            running ? h("button", { "data-testid": "watch-instead", onclick: () => go(`#/game/${encodeURIComponent(gameId)}`) }, "Watch it") : null,
            !running && err.status !== 404 ? h("button", { onclick: () => route() }, "Try again") : null,
          ),
        ),
      ),
    );
    message(`No replay (${err.code}): ${err.message}`);
    return;
  }
  if (current !== screen) return;
  screen.data = data;
  screen.step = data.replay.steps.length - 1;
  screen.beliefs = {};
  renderReplay(screen);
  loadReplayBeliefs(screen);
}
// The replay's belief map at a step is the API's: `GET /games/{id}/belief?turn=N`, the
// default AI Harry's map on Harry's records before turn N (N: one past his last move by
// that step; 1 at the start), so the replay never contradicts the game's own map. The
// current step's is fetched first, then every other one (for the entropy line), each once.
const beliefTurn = (steps, i) => {
  const hist = historyUpTo(steps, i);
  return hist.length ? hist[hist.length - 1].turn + 1 : 1;
};
async function loadReplayBeliefs(screen) {
  const steps = screen.data.replay.steps;
  const wanted = [...new Set([beliefTurn(steps, screen.step), ...steps.map((_, i) => beliefTurn(steps, i))])];
  const fetchOne = async (n) => {
    if (screen.beliefs[n]) return;
    try {
      screen.beliefs[n] = (await api("GET", `/games/${encodeURIComponent(screen.id)}/belief?turn=${n}`)).data;
    } catch (err) {
      screen.beliefs[n] = { error: `${err.code}: ${err.message}` };
    }
    if (current === screen && beliefTurn(steps, screen.step) === n) renderReplay(screen);
  };
  for (const n of wanted) {
    if (current !== screen) return;
    await fetchOne(n);
  }
  screen.beliefsLoaded = true;
  if (current === screen) renderReplay(screen);
}
// the replay's Play: one step every PACE_MS to the end (from the start if at the end)
function replayPlay(screen, on) {
  clearTimeout(screen.timer);
  screen.playing = on;
  const last = screen.data.replay.steps.length - 1;
  if (on && screen.step >= last) screen.step = 0;
  const tick = () => {
    if (current !== screen || !screen.playing) return;
    screen.step = Math.min(last, screen.step + 1);
    if (screen.step >= last) screen.playing = false;
    renderReplay(screen);
    if (screen.playing) screen.timer = setTimeout(tick, PACE_MS);
  };
  renderReplay(screen);
  if (on) screen.timer = setTimeout(tick, PACE_MS);
}
function replayKey(screen, ev) {
  if (!screen.data) return;
  const n = screen.data.replay.steps.length;
  const d = { ArrowRight: 1, ArrowLeft: -1, Home: -n, End: n }[ev.key];
  if (!d) return;
  ev.preventDefault();
  screen.step = Math.max(0, Math.min(n - 1, screen.step + d));
  renderReplay(screen);
}
function historyUpTo(steps, i) {
  return steps.slice(1, i + 1).filter((s) => s.actor === "harry").map((s) => ({ turn: s.turn, action: s.action, observations: s.observations }));
}
function renderReplay(screen) {
  const { replay, belief_history: beliefs } = screen.data;
  const steps = replay.steps;
  const i = screen.step;
  const s = steps[i];
  const rules = replay.rules;
  const hist = historyUpTo(steps, i);
  const own = evidence(rules, hist, rules.horcruxes - s.destroyed);
  const n = beliefTurn(steps, i);
  const map = screen.beliefs && screen.beliefs[n];
  const fromApi = Boolean(map && map.occupancy);
  const ev = fromApi ? { p: map.occupancy } : own;
  const total = rules.locations.reduce((a, l) => a + ev.p[l], 0);
  const aiBelief = beliefs.filter((b) => b.turn <= s.turn).pop();
  const truthH = new Set(s.horcruxes);
  const truthD = new Set(s.decoys);
  const acted = new Set(s.observations.map((o) => o.location).concat(s.action && s.action.location ? [s.action.location] : []));
  const tile = (loc, heat) =>
    h(
      "div",
      { class: `tile ${truthH.has(loc) ? "horcrux" : ""} ${truthD.has(loc) ? "decoy" : ""} ${acted.has(loc) ? "last" : ""}`, heat: heat ? ev.p[loc].toFixed(3) : 0, "data-testid": `replay-${heat ? "belief" : "truth"}-${loc}` },
      h("span", { class: "name" }, place(loc)),
      !heat && (truthH.has(loc) || truthD.has(loc)) ? h("span", { class: "marks" }, truthH.has(loc) ? h("span", { class: "h" }, "HORCRUX") : null, truthD.has(loc) ? h("span", { class: "d" }, "DECOY") : null) : null,
      heat ? h("span", { class: "p" }, `${Math.round(ev.p[loc] * 100)}%`) : null,
    );
  const slider = h("input", { type: "range", min: 0, max: steps.length - 1, value: i, "data-testid": "replay-slider", "aria-label": "replay step" });
  slider.addEventListener("input", () => {
    screen.step = Number(slider.value);
    renderReplay(screen);
    document.querySelector("[data-testid=replay-slider]").focus();
  });
  const vmoves = steps.filter((x) => x.actor === "voldemort" && x.action && x.action.type !== "pass");
  const passes = steps.filter((x) => x.actor === "voldemort" && x.action && x.action.type === "pass").length;
  const what = s.actor === "setup" ? "The Horcruxes are hidden." : `${seatName(s.actor)} ${describeAction(s.action)}${s.observations.length ? `: ${resultOf(s.action, s.observations)}` : ""}.`;
  show(
    h(
      "section",
      { "data-testid": "replay", class: "replay" },
      messageBox(),
      h("div", { class: "row" }, h("button", { onclick: () => go("#/") }, "Lobby"), h("span", { class: "muted" }, "replay of ", h("code", {}, screen.id), ` · seed ${replay.seed}`)),
      h("div", { class: "panel end" }, h("h2", {}, `${seatName(replay.winner)} won`), h("p", {}, `${cap(replay.end_reason || "")}. Every move below is revealed.`)),
      h(
        "div",
        { class: "panel" },
        h("div", { class: "status" }, h("b", { "data-testid": "replay-step" }, `Step ${i} / ${steps.length - 1} · ${s.actor === "setup" ? "the start" : `turn ${Math.min(Math.max(1, s.turn), rules.max_turns)} of ${rules.max_turns}`}`), h("span", {}, what)),
        slider,
        h("div", { class: "row" }, h("button", { "data-testid": "replay-play", "data-playing": String(Boolean(screen.playing)), onclick: () => replayPlay(screen, !screen.playing) }, screen.playing ? "Pause" : "Play"), h("span", { class: "muted" }, "← → step, Home / End; Play: one step a second.")),
      ),
      h(
        "div",
        { class: "grid2" },
        h("div", { class: "panel" }, h("h3", {}, "The truth"), h("div", { class: "board" }, rules.locations.map((l) => tile(l, false)))),
        h(
          "div",
          { class: "panel" },
          h("h3", {}, "Harry's belief (his own evidence)"),
          h("div", { class: "board", "data-testid": "replay-belief", "data-turn": String(n), "data-source": fromApi ? "api" : "own" }, rules.locations.map((l) => tile(l, true))),
          h(
            "p",
            { class: "muted", "data-testid": "replay-belief-says" },
            fromApi
              ? `What the strongest AI Harry would believe on Harry's evidence ${n > 1 ? `after his move at turn ${n - 1}` : "at the start"}: ${unsure(map.entropy, rules)}; the chances add up to ${total.toFixed(2)}, the Horcruxes left (${s.horcruxes.length}).`
              : map && map.error
                ? `The AI's map could not be read (${map.error}); shown: the page's own estimate (independent locations).`
                : "Reading the AI's map; until it arrives: the page's own estimate (independent locations).",
          ),
          aiBelief ? h("p", { class: "muted", "data-testid": "ai-belief" }, `This game's AI Harry, as it chose its move at turn ${aiBelief.turn}: ${unsure(aiBelief.entropy, rules)}; most likely ${aiBelief.top.map((t) => `${place(t.location)} ${Math.round(t.p * 100)}%`).join(", ")}`) : null,
        ),
      ),
      h("div", { class: "panel" }, h("h3", {}, "How unsure Harry was, turn by turn"), entropyChart(screen, steps, beliefs, rules), h("p", { class: "legend" }, h("span", {}, h("i", { class: "sw gold" }), screen.beliefsLoaded ? "how unsure an AI Harry would be on Harry's evidence after each of his moves" : beliefs.length ? "how unsure the AI Harry was" : "how unsure Harry's evidence leaves him"), h("span", {}, h("i", { class: "sw red" }), "Voldemort relocated"), h("span", {}, h("i", { class: "sw violet" }), "decoy planted"), h("span", {}, h("i", { class: "sw blue" }), "this step"))),
      h(
        "div",
        { class: "panel" },
        h("h3", {}, "Every Voldemort move"),
        vmoves.length ? h("ul", { class: "log plain", "data-testid": "voldemort-moves" }, vmoves.map((x) => h("li", {}, h("b", { class: "turn" }, `Turn ${x.turn}`), ` ${describeAction(x.action)}`))) : h("p", {}, "Voldemort never moved a Horcrux nor planted a decoy."),
        h("p", { class: "muted" }, `and ${passes} pass${passes === 1 ? "" : "es"}.`),
      ),
      decisionPanel(screen.data.decisions || [], s),
    ),
  );
}
// a move's label as the decision notes keep it (`plant_decoy Knockturn`) in words
const moveWords = (label) =>
  String(label || "")
    .replace(/^plant_decoy\b/, "planted a decoy at")
    .replace(/^relocate\b/, "moved a Horcrux:")
    .replace(/^search\b/, "searched")
    .replace(/^attack\b/, "attacked")
    .replace(/^pass\b/, "passed")
    .replace(/_/g, " ");
// the AI seats' decisions (the replay's `decisions`): the one behind this step, and a tally
function decisionPanel(notes, step) {
  if (!notes.length) return h("div", { class: "panel", "data-testid": "decision" }, h("h3", {}, "AI decisions"), h("p", { class: "muted" }, "No AI seat in this game: people made every move."));
  const tally = {};
  for (const n of notes) {
    const key = `${seatName(n.seat)}${n.tier === "zero" ? " without a model" : " with a model"}${n.source === "fallback" ? " (fell back)" : ""}`;
    tally[key] = (tally[key] || 0) + 1;
  }
  const note = notes.find((n) => n.seat === step.actor && n.turn === step.turn);
  const rows = [];
  if (!note) rows.push(h("p", { class: "muted", "data-testid": "decision-none" }, step.actor === "setup" ? "Step through the game to see each AI move's decision." : `${seatName(step.actor)} is a person here: no AI decision.`));
  else {
    const who = { planner: "its own exact odds (no model call)", rule: "its rule (no model call)", llm: "the model", fallback: `the fallback (${note.fallback_reason || "no playable move"})`, heuristic: "the heuristic", explore: "exploration" }[note.source] || note.source;
    const level = levelOf(note.seat, note.brain);
    const memory = { zero: "none: sure enough to play without a model", compressed: "a short summary", full: "the whole working memory" }[note.tier] || note.tier;
    const facts = [["AI", `${level ? `${level.label}: ` : ""}${brainSays(note.seat, note.brain) || note.brain}`], ["memory it used", memory], ["chosen by", who], ["played", step.action ? describeAction(step.action) : moveWords(note.move)]];
    if (note.llm_move && note.llm_move !== note.move) facts.push(["the model's move", moveWords(note.llm_move)]);
    if (note.planner_move) facts.push(["without the model it would have", moveWords(note.planner_move)]);
    if (note.tokens_in || note.tokens_out) facts.push(["tokens", `${note.tokens_in} in, ${note.tokens_out} out`]);
    facts.push(["latency", `${(note.latency_ms || 0).toFixed(1)} ms`]);
    rows.push(h("dl", { class: "stats", "data-testid": "decision-facts" }, facts.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])));
    if (note.context !== undefined && note.context !== null) rows.push(h("h3", {}, "The context the model saw"), h("pre", { class: "trace", "data-testid": "decision-context" }, note.context));
    if (note.offered && note.offered.length) rows.push(h("p", { class: "muted" }, `Offered: ${note.offered.join("; ")}`));
    if (note.reply !== undefined && note.reply !== null) rows.push(h("h3", {}, "What the model replied"), h("pre", { class: "trace", "data-testid": "decision-reply" }, note.reply || "(nothing)"));
    if (note.cut && note.cut.length) rows.push(h("p", { class: "muted" }, `Cut to the stored length: ${note.cut.join(", ")}.`));
  }
  return h(
    "div",
    { class: "panel", "data-testid": "decision" },
    h("h3", {}, `AI decision at this step`),
    rows,
    h("p", { class: "muted", "data-testid": "decision-tally" }, `${notes.length} AI decisions: ${Object.entries(tally).map(([k, v]) => `${k} ×${v}`).join(", ")}.`),
  );
}
function entropyChart(screen, steps, beliefs, rules) {
  const W = 1000;
  const H = 200;
  const pad = 24;
  const lastTurn = steps[steps.length - 1].turn;
  const maxT = Math.min(rules.max_turns, Math.max(10, lastTurn));
  let points;
  const got = screen.beliefsLoaded ? steps.map((st, i) => (st.actor === "harry" ? [st.turn, screen.beliefs[beliefTurn(steps, i)]] : null)).filter((x) => x && x[1] && x[1].occupancy) : [];
  if (got.length) points = got.map(([t, b]) => [t, b.entropy]);
  else if (beliefs.length) points = beliefs.map((b) => [b.turn, b.entropy]);
  else {
    points = [];
    for (let i = 0; i < steps.length; i++) {
      if (steps[i].actor !== "harry") continue;
      const hist = historyUpTo(steps, i);
      points.push([steps[i].turn, entropyBits(evidence(rules, hist, rules.horcruxes - steps[i].destroyed).p)]);
    }
  }
  const maxE = Math.log2(rules.locations.length);
  const x = (t) => pad + ((W - 2 * pad) * (t - 1)) / Math.max(1, maxT - 1);
  const y = (e) => H - pad - ((H - 2 * pad) * Math.min(e, maxE)) / maxE;
  const chart = svg("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "xMidYMid meet", "data-testid": "entropy-chart", role: "img", "aria-label": "Harry's uncertainty per turn" });
  chart.append(svg("line", { class: "axis", x1: pad, y1: H - pad, x2: W - pad, y2: H - pad }), svg("line", { class: "axis", x1: pad, y1: pad, x2: pad, y2: H - pad }));
  for (const st of steps) {
    if (st.actor !== "voldemort" || !st.action || st.action.type === "pass") continue;
    chart.append(svg("line", { class: st.action.type === "relocate" ? "reloc" : "decoy", x1: x(st.turn), x2: x(st.turn), y1: pad, y2: H - pad }));
  }
  if (points.length) chart.append(svg("polyline", { class: "ent", points: points.map(([t, e]) => `${x(t).toFixed(1)},${y(e).toFixed(1)}`).join(" ") }));
  const now = steps[screen.step].turn || 1;
  chart.append(svg("line", { class: "now", x1: x(now), x2: x(now), y1: pad, y2: H - pad }));
  const label = (tx, ty, text) => {
    const el = svg("text", { x: tx, y: ty });
    el.textContent = text;
    chart.append(el);
  };
  label(pad + 2, pad - 8, "no idea");
  label(W - pad - 40, H - 8, `turn ${maxT}`);
  label(pad, H - 8, "turn 1");
  return chart;
}

// ------------------------------------------------------------------ start
window.addEventListener("hashchange", route);
document.addEventListener("visibilitychange", () => {
  if (!document.hidden && current && current.kind === "game" && current.game && current.game.status !== "over") refreshSoon(current);
});
loadConfig().then(loadWords).then(route);
