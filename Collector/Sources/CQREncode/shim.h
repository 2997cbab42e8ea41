// The system's libqrencode (Debian libqrencode-dev), imported into Swift by the CQREncode module:
// the Connect App modal's QR code of seed 002's deep link.
#include <qrencode.h>
