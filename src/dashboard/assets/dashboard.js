// Behaviour the pages need beyond plain forms (no inline handlers: the CSP forbids them).
// - [data-confirm=ID] opens <dialog id=ID>; [data-close] inside a dialog closes it.
// - [data-copy=ID] copies the text of #ID to the clipboard and says so.
(function () {
  'use strict';
  document.addEventListener('click', function (event) {
    var target = event.target instanceof Element ? event.target : null;
    if (!target) return;
    var opener = target.closest('[data-confirm]');
    if (opener) {
      var dialog = document.getElementById(opener.getAttribute('data-confirm'));
      if (dialog && typeof dialog.showModal === 'function') {
        event.preventDefault();
        dialog.showModal();
      }
      return;
    }
    var closer = target.closest('[data-close]');
    if (closer) {
      var open = closer.closest('dialog');
      if (open) open.close();
      return;
    }
    var copier = target.closest('[data-copy]');
    if (copier) {
      var source = document.getElementById(copier.getAttribute('data-copy'));
      var status = copier.parentElement && copier.parentElement.querySelector('.copied');
      if (!source) return;
      var say = function (text) { if (status) status.textContent = text; };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(source.textContent || '').then(function () { say('Copied.'); }, function () { say('Select it and copy it.'); });
      } else {
        var range = document.createRange();
        range.selectNodeContents(source);
        var selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        say('Selected: press Ctrl+C to copy.');
      }
    }
  });
})();
