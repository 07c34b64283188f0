// moment.js wires the time control of a page that shows one moment of an
// application's life (form.moment, the "moment" partial): moving the
// slider writes the moment as a duration after the application's start
// ("+4.5s") into the form's at= field and submits the form.
"use strict";
(function () {
  for (const form of document.querySelectorAll("form.moment")) {
    const slider = form.querySelector(".moment-slider");
    const at = form.querySelector(".moment-at");
    if (!slider || !at) continue;
    slider.addEventListener("input", () => { at.value = "+" + Number(slider.value) / 1000 + "s"; });
    slider.addEventListener("change", () => {
      at.value = "+" + Number(slider.value) / 1000 + "s";
      form.submit();
    });
  }
})();
