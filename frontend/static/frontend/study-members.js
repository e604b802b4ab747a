// A study's members page (study admins): the members with their roles, add an existing
// account, change roles, deactivate; invitation links (shown once) and their list, revoke.
// A site admin without a role sees the members and may add themselves. Everything goes
// through the REST API; names are set with textContent only.

import { csrfToken } from "./redline.js";

const data = JSON.parse(document.getElementById("members-data").textContent);
const base = `/api/studies/${data.study}`;
const membersBody = document.querySelector("#members tbody");
const membersResult = document.getElementById("members-result");

async function call(method, url, body) {
  const response = await fetch(url, {
    method,
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = await response.json().catch(() => ({ detail: response.statusText }));
  return { ok: response.ok, answer };
}

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function roleBoxes(container, name, checked = []) {
  for (const role of data.roles) {
    const label = element("label", undefined, "inline");
    const box = document.createElement("input");
    box.type = "checkbox";
    box.name = name;
    box.value = role.value;
    box.checked = checked.includes(role.value);
    label.append(box, ` ${role.label}`);
    container.appendChild(label);
  }
}

const chosen = (container, name) => [...container.querySelectorAll(`input[name="${name}"]:checked`)].map((b) => b.value);

function say(place, message, error) {
  place.textContent = message;
  place.classList.toggle("error", Boolean(error));
}

async function reloadMembers() {
  const { ok, answer } = await call("GET", `${base}/members/`);
  if (ok) renderMembers(answer);
}

function renderMembers(members) {
  membersBody.replaceChildren();
  for (const member of members) {
    const row = element("tr");
    row.dataset.member = member.username;
    if (!member.active) row.className = "deactivated";
    row.appendChild(element("td", member.username));
    const roles = element("td");
    if (!member.active) {
      roles.appendChild(element("span", "deactivated", "badge"));
    } else if (data.read_only) {
      for (const role of member.roles) roles.append(element("span", role, "badge"), " ");
    } else {
      roleBoxes(roles, `roles-${member.username}`, member.roles);
    }
    row.appendChild(roles);
    row.appendChild(element("td", new Date(member.since).toLocaleDateString()));
    const consent = member.consent_version
      ? `version ${member.consent_version}, ${new Date(member.consent_at).toLocaleString()}` : "—";
    row.appendChild(element("td", consent, "member-consent"));
    if (!data.read_only) {
      const actions = element("td", undefined, "member-actions");
      if (member.active) {
        const save = element("button", "Save roles");
        save.type = "button";
        save.addEventListener("click", () => saveRoles(member.username, roles));
        const deactivate = element("button", "Deactivate");
        deactivate.type = "button";
        deactivate.addEventListener("click", () => deactivateMember(member.username));
        actions.append(save, " ", deactivate);
      }
      row.appendChild(actions);
    }
    membersBody.appendChild(row);
  }
}

async function saveRoles(username, cell) {
  const { ok, answer } = await call("PATCH", `${base}/members/${encodeURIComponent(username)}/`,
    { roles: chosen(cell, `roles-${username}`) });
  say(membersResult, ok ? `${username} is now ${answer.roles.join(", ")}.` : answer.detail, !ok);
  await reloadMembers();
}

async function deactivateMember(username) {
  if (!window.confirm(`Deactivate ${username}? They lose every role here and their review claims go back to the queue; their work is kept.`)) return;
  const { ok, answer } = await call("POST", `${base}/members/${encodeURIComponent(username)}/deactivate/`);
  say(membersResult, answer.detail, !ok);
  await reloadMembers();
}

const addForm = document.getElementById("add-form");
if (addForm) {
  roleBoxes(addForm.querySelector(".role-boxes"), "roles");
  addForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const place = document.getElementById("add-error");
    const username = addForm.elements.username.value.trim();
    const roles = chosen(addForm, "roles");
    if (!username) return say(place, "Give the person's user name.", true);
    if (!roles.length) return say(place, "Choose at least one role.", true);
    const { ok, answer } = await call("POST", `${base}/members/`, { username, roles });
    say(place, ok ? `${username} added as ${answer.roles.join(", ")}.` : answer.detail, !ok);
    if (ok) addForm.reset();
    await reloadMembers();
  });
}

const inviteForm = document.getElementById("invite-form");
const invitationsBody = document.querySelector("#invitations tbody");

// How the e-mail of an invitation went, in one sentence.
function mailSentence(invitation) {
  if (invitation.mail_state === "sent") return `Sent to ${invitation.email}.`;
  if (invitation.mail_state === "failed") return `Not sent to ${invitation.email}: ${invitation.mail_error}`;
  if (invitation.mail_state === "sending") return `Sending to ${invitation.email}…`;
  return "";
}

function mailCell(invitation) {
  const cell = element("td");
  cell.className = "invitation-mail";
  if (!invitation.email) {
    cell.textContent = "—";
    return cell;
  }
  cell.appendChild(element("div", invitation.email));
  const stateText = {
    sent: `sent ${invitation.mail_sent_at ? new Date(invitation.mail_sent_at).toLocaleString() : ""}`,
    failed: "not sent", sending: "sending…",
  }[invitation.mail_state] || "";
  const badge = element("span", stateText, `badge mail-${invitation.mail_state || "none"}`);
  cell.appendChild(badge);
  if (invitation.mail_state === "failed") cell.appendChild(element("div", invitation.mail_error, "field-error mail-error"));
  return cell;
}

async function reloadInvitations() {
  const { ok, answer } = await call("GET", `${base}/invitations/`);
  if (!ok) return;
  invitationsBody.replaceChildren();
  for (const invitation of answer) {
    const row = element("tr");
    row.dataset.invitation = String(invitation.id);
    row.append(
      element("td", invitation.note || "—"), element("td", invitation.roles.join(", ")),
      element("td", invitation.state), mailCell(invitation), element("td", invitation.created_by),
      element("td", new Date(invitation.expires_at).toLocaleString()), element("td", invitation.accepted_by || ""),
    );
    const actions = element("td");
    if (invitation.state === "open" && invitation.email) {
      const again = element("button", invitation.mail_state === "failed" ? "Send again" : "Re-send");
      again.type = "button";
      again.dataset.send = String(invitation.id);
      again.title = "Sends a new link to this address; the link sent before stops working.";
      again.addEventListener("click", async () => {
        again.disabled = true;
        const { ok: done, answer: said } = await call("POST", `${base}/invitations/${invitation.id}/send/`, {});
        say(membersResult, done ? mailSentence(said) : said.detail, !done || said.mail_state === "failed");
        await reloadInvitations();
      });
      actions.append(again, " ");
    }
    if (invitation.state === "open") {
      const revoke = element("button", "Revoke");
      revoke.type = "button";
      revoke.addEventListener("click", async () => {
        const { ok: done, answer: said } = await call("POST", `${base}/invitations/${invitation.id}/revoke/`);
        if (!done) say(membersResult, said.detail, true);
        await reloadInvitations();
      });
      actions.appendChild(revoke);
    }
    row.appendChild(actions);
    invitationsBody.appendChild(row);
  }
}

if (inviteForm) {
  roleBoxes(inviteForm.querySelector(".role-boxes"), "roles");
  inviteForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const place = document.getElementById("invite-error");
    const roles = chosen(inviteForm, "roles");
    if (!roles.length) return say(place, "Choose at least one role.", true);
    if (roles.includes("annotator") && roles.includes("researcher")) {
      return say(place, "Nobody is both annotator and researcher of one study.", true);
    }
    const days = Number(inviteForm.elements.days.value);
    if (!Number.isInteger(days) || days < 1 || days > data.days_max) {
      return say(place, `An invitation lasts from 1 to ${data.days_max} days.`, true);
    }
    const email = inviteForm.elements.email.value.trim();
    const { ok, answer } = await call("POST", `${base}/invitations/`, { roles, note: inviteForm.elements.note.value, days, email });
    say(place, ok ? "" : answer.detail, !ok);
    if (ok) {
      inviteForm.reset();
      document.getElementById("invite-link").hidden = false;
      say(document.getElementById("invite-mail"), mailSentence(answer), answer.mail_state === "failed");
      document.getElementById("invite-url").value = answer.url;
      await reloadInvitations();
    }
  });
  document.getElementById("invite-copy").addEventListener("click", () => {
    const url = document.getElementById("invite-url");
    url.select();
    navigator.clipboard?.writeText(url.value);
  });
  reloadInvitations();
}

// Recruitment links (crowd platforms) and their participants, by pseudonym.
const recruitForm = document.getElementById("recruit-form");
const linksBody = document.querySelector("#recruitment-links tbody");
const participantsBody = document.querySelector("#participants tbody");
const DEFAULT_PARAM = { prolific: "PROLIFIC_PID", other: "pid" };
const when = (value) => (value ? new Date(value).toLocaleString() : "—");
// "timed out" (their time allowed ran out before they completed) says when, as do completed
// and withdrawn; someone working says until when they have, if their link gives a time.
function participantState(person) {
  if (person.state_at) return `${person.state} ${when(person.state_at)}`;
  return person.time_out_at ? `${person.state} (until ${when(person.time_out_at)})` : person.state;
}

async function reloadRecruitment() {
  const [links, people] = await Promise.all([call("GET", `${base}/recruitment-links/`), call("GET", `${base}/participants/`)]);
  if (links.ok) {
    linksBody.replaceChildren();
    for (const link of links.answer) {
      const row = element("tr");
      row.dataset.link = String(link.id);
      row.append(
        element("td", link.label || "—"), element("td", link.platform === "prolific" ? "Prolific" : "another platform"),
        element("td", `${link.joined} of ${link.cap}`), element("td", String(link.completed)),
        element("td", String(link.declines)),
        element("td", String(link.quota)),
        element("td", link.time_allowed ? `${link.time_allowed} min` : "no limit"),
        element("td", link.completion_code), element("td", when(link.expires_at)),
        element("td", link.state),
      );
      const actions = element("td");
      if (link.state !== "closed") {
        const close = element("button", "Close");
        close.type = "button";
        close.addEventListener("click", async () => {
          if (!window.confirm("Close this link? Nobody new joins through it; its participants may finish.")) return;
          const { ok, answer } = await call("POST", `${base}/recruitment-links/${link.id}/close/`);
          if (!ok) say(membersResult, answer.detail, true);
          await reloadRecruitment();
        });
        actions.appendChild(close);
      }
      row.appendChild(actions);
      linksBody.appendChild(row);
    }
  }
  if (people.ok) {
    participantsBody.replaceChildren();
    for (const person of people.answer) {
      const row = element("tr");
      row.dataset.participant = person.pseudonym;
      row.dataset.state = person.state;
      row.append(
        element("td", person.pseudonym), element("td", `#${person.link}`), element("td", when(person.joined_at)),
        element("td", `${person.done} of ${person.assigned}`), element("td", when(person.completed_at)),
        element("td", participantState(person)),
      );
      participantsBody.appendChild(row);
    }
  }
}

if (recruitForm) {
  const fields = recruitForm.elements;
  fields.platform.addEventListener("change", () => { fields.participant_param.placeholder = DEFAULT_PARAM[fields.platform.value]; });
  recruitForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const place = document.getElementById("recruit-error");
    const cap = Number(fields.cap.value);
    const quota = Number(fields.quota.value);
    if (!Number.isInteger(cap) || cap < 1) return say(place, "Give how many participants the link takes (1 or more).", true);
    if (!Number.isInteger(quota) || quota < 1) return say(place, "Give how many items each participant does (1 or more).", true);
    const allowed = fields.time_allowed.value ? Number(fields.time_allowed.value) : null;
    if (allowed !== null && (!Number.isInteger(allowed) || allowed < 1)) {
      return say(place, "Give the time allowed in whole minutes (1 or more), or leave it empty for no limit.", true);
    }
    const body = {
      platform: fields.platform.value, label: fields.label.value, cap, quota,
      days: fields.days.value ? Number(fields.days.value) : null,
      time_allowed: allowed,
      participant_param: fields.participant_param.value.trim(),
      completion_code: fields.completion_code.value.trim(), completion_url: fields.completion_url.value.trim(),
    };
    const { ok, answer } = await call("POST", `${base}/recruitment-links/`, body);
    say(place, ok ? "" : answer.detail, !ok);
    if (ok) {
      recruitForm.reset();
      document.getElementById("recruit-link").hidden = false;
      document.getElementById("recruit-url").value = answer.url;
      await reloadRecruitment();
    }
  });
  document.getElementById("recruit-copy").addEventListener("click", () => {
    const url = document.getElementById("recruit-url");
    url.select();
    navigator.clipboard?.writeText(url.value);
  });
  reloadRecruitment();
}

const joinForm = document.getElementById("join-form");
joinForm?.addEventListener("submit", async (event) => {
  event.preventDefault();
  const { ok, answer } = await call("POST", `${base}/members/`, { username: data.me, roles: [joinForm.elements.role.value] });
  say(document.getElementById("join-result"), ok ? "Added; reloading…" : answer.detail, !ok);
  if (ok) window.location.reload();
});

renderMembers(data.members);
