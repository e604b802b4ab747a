// A participant's completion page: back to the platform's completion URL after a few seconds,
// counting down, unless they choose to stay (time limits must be adjustable: WCAG 2.2.1).

const section = document.getElementById("participant-done");
const url = section.dataset.returnUrl;
const countdown = document.getElementById("completion-countdown");
const stay = document.getElementById("completion-stay");
let left = Number(section.dataset.returnSeconds) || 5;
const platform = section.dataset.platform;

function tell() {
  countdown.textContent = `You are taken back to ${platform} with this code in ${left} second${left === 1 ? "" : "s"}.`;
}

tell();
stay.hidden = false;
const timer = window.setInterval(() => {
  left -= 1;
  if (left > 0) return tell();
  window.clearInterval(timer);
  window.location.assign(url);
}, 1000);
stay.addEventListener("click", () => {
  window.clearInterval(timer);
  stay.hidden = true;
  countdown.textContent = `Return to ${platform} with the button when you are ready.`;
});
