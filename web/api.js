// Horcrux Hunt in the browser: the HTTP API, the players' words, the brains offered and the seats held.

import { NAME_KEY, SEATS_KEY, state } from "./dom.js";

// ------------------------------------------------------------------ the API
class ApiError extends Error {
  constructor(status, code, text, data) {
    super(text);
    this.status = status;
    this.code = code;
    this.data = data;
  }
}
export async function api(method, path, { token, body, headers } = {}) {
  const sent = { ...(headers || {}) };
  if (token) sent.authorization = `Bearer ${token}`;
  if (body !== undefined) sent["content-type"] = "application/json";
  let response;
  try {
    response = await fetch(state.api + path, {
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
export async function loadConfig() {
  try {
    const r = await fetch("config.json", { cache: "no-cache" });
    if (!r.ok) return;
    const c = await r.json();
    if (c && typeof c.apiUrl === "string" && /^https?:\/\/[^\s]+$/.test(c.apiUrl)) {
      state.api = c.apiUrl.replace(/\/+$/, "");
    }
  } catch {
    /* no config: the API is this page's origin */
  }
}
export async function loadWords() {
  const meta = document.querySelector("meta[name=horcrux-words]");
  try {
    const r = await fetch(meta ? meta.getAttribute("content") : "words.json");
    if (r.ok) state.words = await r.json();
  } catch {
    /* the page still works, with fewer words */
  }
}
// `{name}` placeholders filled from `vars` (the terminal fills the same texts)
export const fill = (text, vars) => String(text || "").replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));
// a game still to be played: `active`, or `abandoned` (nobody has moved for the server's
// idle time: the lobby no longer lists it, and a seat's move makes it active again)
export const running = (g) => g.status === "active" || g.status === "abandoned";
// what a game nobody moves in says to the one who reads it (words.json's `left`)
export function leftSays(g) {
  const left = state.words.left || {};
  const vars = { minutes: left.minutes || 30, other: g.to_move ? g.seats[g.to_move].name || (g.seats[g.to_move].kind === "ai" ? "the AI" : "the other player") : "" };
  const voice = !g.your_seat ? "spectator" : g.to_move === g.your_seat ? "player" : "waiting";
  return fill(left[voice] || "", vars);
}
export const plural = (n, one, many) => `${n} ${n === 1 ? one : many || `${one}s`}`;
export const pct = (x) => `${Math.round(x * 100)}%`;
// a level of an AI opponent by its brain spec (the level's name, its sentence), else null
export function levelOf(seat, brain) {
  const base = String(brain || "").split(":")[0];
  return (state.words.levels[seat] || []).find((l) => l.brain === base) || null;
}
export const levelSays = (level) => fill(level.sentence, { wins: Math.round(level.harry_wins * 100) });
export const brainSays = (seat, brain) => (state.words.brains[seat] || {})[String(brain || "").split(":")[0]] || "";
export async function loadBrains() {
  if (state.brains) return state.brains;
  try {
    state.brains = (await api("GET", "/brains")).data;
  } catch {
    state.brains = {
      harry: [{ name: "planner", description: "", default: true }],
      voldemort: [{ name: "reference", description: "", default: true }],
    };
  }
  return state.brains;
}

// ------------------------------------------------------------------ seats held (localStorage)
export function heldSeats() {
  try {
    const value = JSON.parse(localStorage.getItem(SEATS_KEY) || "{}");
    return value && typeof value === "object" ? value : {};
  } catch {
    return {};
  }
}
export function holdSeat(gameId, seat, token, name, invite) {
  const all = heldSeats();
  all[gameId] = { seat, token, name: name || null, since: Date.now(), ...(invite ? { invite } : {}) };
  localStorage.setItem(SEATS_KEY, JSON.stringify(all));
}
export function markOver(gameId) {
  // a held game seen finished: "Your games" offers its replay, not Resume
  const all = heldSeats();
  if (!all[gameId] || all[gameId].over) return;
  all[gameId].over = true;
  localStorage.setItem(SEATS_KEY, JSON.stringify(all));
}
export function leaveSeat(gameId) {
  const all = heldSeats();
  delete all[gameId];
  localStorage.setItem(SEATS_KEY, JSON.stringify(all));
}
export const playerName = () => localStorage.getItem(NAME_KEY) || "";
