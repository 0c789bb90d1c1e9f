// Tell the site the browser's time zone (an IANA name such as "Europe/Madrid"), so pages show
// times in it (reseller.middleware.TimeZoneMiddleware). Refreshed when it changes.
(function () {
  try {
    var zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (!zone || document.cookie.indexOf("tz=" + zone) !== -1) return;
    document.cookie = "tz=" + zone + "; path=/; max-age=31536000; samesite=lax";
  } catch (e) { /* an old browser: times stay in UTC */ }
})();
